package io.xdsproxy.app;

import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.app.ProxyConfig.Setting;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * The config file ({@code --config}): a YAML mapping of the flags' names to their values, read with
 * where each was given, so that a bad value is named with its line.
 */
final class ConfigFile {

  private ConfigFile() {}

  /**
   * The settings {@code file} gives, each with where it was given; {@code keys} are the keys it may
   * have, {@code listKeys} those that may take a list.
   */
  static Map<String, Setting> read(Path file, List<String> keys, List<String> listKeys)
      throws ConfigException {
    Node root;
    try (Reader reader = Files.newBufferedReader(file)) {
      root = new Yaml(new LoaderOptions()).compose(reader);
    } catch (IOException e) {
      throw new ConfigException("cannot read config file " + file + ": " + e.getMessage());
    } catch (RuntimeException e) {
      throw new ConfigException(
          "config file " + file + " is not valid YAML: " + e.getMessage().replace('\n', ' '));
    }
    Map<String, Setting> settings = new LinkedHashMap<>();
    if (root == null) {
      return settings;
    }
    if (!(root instanceof MappingNode mapping)) {
      throw new ConfigException(file + ": the config file must be a mapping of keys to values");
    }
    for (NodeTuple tuple : mapping.getValue()) {
      int line = tuple.getKeyNode().getStartMark().getLine() + 1;
      String where = file + " line " + line;
      if (!(tuple.getKeyNode() instanceof ScalarNode key) || !keys.contains(key.getValue())) {
        throw new ConfigException(
            where
                + ": unknown key "
                + describe(tuple.getKeyNode())
                + " (known: "
                + String.join(", ", keys)
                + ")");
      }
      List<String> values = new ArrayList<>();
      if (tuple.getValueNode() instanceof ScalarNode value) {
        values.add(value.getValue());
      } else if (tuple.getValueNode() instanceof SequenceNode list
          && listKeys.contains(key.getValue())) {
        for (Node item : list.getValue()) {
          if (!(item instanceof ScalarNode scalar)) {
            throw new ConfigException(
                where + ": the items of " + key.getValue() + " must be single values");
          }
          values.add(scalar.getValue());
        }
      } else {
        throw new ConfigException(
            where
                + ": key "
                + key.getValue()
                + " needs a single value"
                + (listKeys.contains(key.getValue()) ? " or a list" : ""));
      }
      settings.put(key.getValue(), new Setting(values, where + " (" + key.getValue() + ")"));
    }
    return settings;
  }

  private static String describe(Node node) {
    return node instanceof ScalarNode scalar
        ? "'" + scalar.getValue() + "'"
        : "of kind " + node.getNodeId();
  }
}
