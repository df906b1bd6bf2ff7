package io.xdsproxy.app;

import static io.xdsproxy.app.testing.Yamls.cast;
import static io.xdsproxy.app.testing.Yamls.get;
import static io.xdsproxy.app.testing.Yamls.list;
import static io.xdsproxy.app.testing.Yamls.map;
import static io.xdsproxy.app.testing.Yamls.str;
import static io.xdsproxy.app.testing.Yamls.strings;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.yaml.snakeyaml.Yaml;

/**
 * The pod a rendered Deployment makes, as far as the proxy in it can tell: the files its volumes
 * mount (ConfigMaps from the rendered objects, Secrets from what the test gives, as an operator's
 * would be), laid out under a directory of the test, and the container's arguments, parsed as
 * {@link Main} parses them. A path of the config file or the arguments inside a mount is moved
 * under that directory with it; one that names nothing mounted fails to parse, as in the pod.
 *
 * <p>Shared by the checks of the kustomization (DeployManifestsTest) and of the Helm chart
 * (HelmChartTest), so both hold their manifests to the same reading.
 */
final class DeployedPod {

  private final List<Map<String, Object>> objects;
  private final Map<String, Map<String, String>> external;
  private final Path root;

  /**
   * @param objects the rendered objects: one Deployment, and the ConfigMaps its volumes name
   * @param external the contents of the Secrets, and ConfigMaps not among {@code objects}, that its
   *     volumes name (an operator's certificates and CA bundles), by name, then key
   * @param root an empty directory standing for the container's filesystem
   */
  DeployedPod(
      List<Map<String, Object>> objects, Map<String, Map<String, String>> external, Path root) {
    this.objects = objects;
    this.external = external;
    this.root = root;
  }

  Map<String, Object> deployment() {
    return one("Deployment");
  }

  /** The pod template: metadata and spec. */
  Map<String, Object> pod() {
    return map(deployment(), "spec", "template");
  }

  Map<String, Object> container() {
    List<Object> containers = list(pod(), "spec", "containers");
    assertThat(containers).as("the Deployment's containers").hasSize(1);
    return cast(containers.get(0));
  }

  /** The container's ports, by name. */
  Map<String, Integer> containerPorts() {
    Map<String, Integer> ports = new LinkedHashMap<>();
    for (Object item : list(container(), "ports")) {
      Map<String, Object> port = cast(item);
      assertThat(port).as("a container port").containsKeys("name", "containerPort");
      ports.put((String) port.get("name"), (Integer) port.get("containerPort"));
    }
    return ports;
  }

  /**
   * A probe's, Service's or NetworkPolicy's port, given by number or by the name of a container
   * port.
   */
  int port(Object port) {
    if (port instanceof Integer number) {
      return number;
    }
    Map<String, Integer> ports = containerPorts();
    assertThat(ports).as("container ports by name").containsKey((String) port);
    return ports.get(port);
  }

  /** The path the container is given with {@code --config}. */
  String configArgument() {
    List<String> args = strings(container(), "args");
    for (int i = 0; i < args.size(); i++) {
      if (args.get(i).equals("--config") && i + 1 < args.size()) {
        return args.get(i + 1);
      } else if (args.get(i).startsWith("--config=")) {
        return args.get(i).substring("--config=".length());
      }
    }
    throw new AssertionError("the container's args have no --config: " + args);
  }

  /** The mount that puts a file at {@code --config}'s path. */
  Map<String, Object> configMount() {
    String configPath = configArgument();
    for (Object item : list(container(), "volumeMounts")) {
      Map<String, Object> mount = cast(item);
      String mountPath = (String) mount.get("mountPath");
      if (configPath.equals(mountPath) || configPath.startsWith(mountPath + "/")) {
        return mount;
      }
    }
    throw new AssertionError(
        "no volume mount holds --config " + configPath + ": " + list(container(), "volumeMounts"));
  }

  /** The pod's volume named {@code name}. */
  Map<String, Object> volume(String name) {
    return list(pod(), "spec", "volumes").stream()
        .map(v -> cast(v))
        .filter(v -> name.equals(v.get("name")))
        .findFirst()
        .orElseThrow(() -> new AssertionError("the pod has no volume " + name));
  }

  /** The ConfigMap mounted where {@code --config} points. */
  Map<String, Object> configMap() {
    String name = str(volume((String) configMount().get("name")), "configMap", "name");
    return named("ConfigMap", name);
  }

  /** The key of the config file in {@link #configMap()}. */
  String configMapKey() {
    Map<String, Object> mount = configMount();
    String configPath = configArgument();
    if (mount.containsKey("subPath")) {
      return (String) mount.get("subPath");
    }
    String file = configPath.substring(((String) mount.get("mountPath")).length() + 1);
    Map<String, Object> volume = volume((String) mount.get("name"));
    if (volume.containsKey("configMap") && map(volume, "configMap").containsKey("items")) {
      for (Object item : list(volume, "configMap", "items")) {
        if (file.equals(cast(item).get("path"))) {
          return (String) cast(item).get("key");
        }
      }
    }
    return file;
  }

  /** The config file as the ConfigMap holds it. */
  String configText() {
    String key = configMapKey();
    assertThat(map(configMap(), "data")).as("the ConfigMap's data").containsKey(key);
    return str(configMap(), "data", key);
  }

  /**
   * The proxy's configuration as the pod starts it: every mounted file written under the test's
   * directory, the container's arguments and the config file's paths moved there, parsed as Main
   * parses them. A key the proxy does not know fails here, naming its line.
   */
  ProxyConfig config() throws IOException {
    List<String> mountPaths = layOut();
    List<String> args = new ArrayList<>();
    for (String arg : strings(container(), "args")) {
      args.add(rebase(arg, mountPaths));
    }
    ProxyConfig config;
    try {
      config = ProxyConfig.parse(args.toArray(String[]::new));
    } catch (ProxyConfig.ConfigException e) {
      throw new AssertionError(
          "the container's args "
              + strings(container(), "args")
              + " with its mounted files"
              + " (config file:\n"
              + configText()
              + ") are refused as the proxy would refuse them: "
              + e.getMessage(),
          e);
    }
    Map<String, Object> keys = cast(new Yaml().load(configText()));
    assertThat(keys.keySet()).as("the keys of the config file").isSubsetOf(ProxyConfig.KEYS);
    return config;
  }

  /** The config file's keys and values, as the ConfigMap holds them. */
  Map<String, Object> configKeys() {
    return cast(new Yaml().load(configText()));
  }

  /** Where a path of the pod is in the test's directory. */
  Path file(String podPath) {
    return root.resolve(podPath.substring(1));
  }

  /**
   * Writes every file the container's mounts give it (ConfigMap and Secret volumes, with their
   * items and subPaths, and projected service-account tokens) and makes every other mount a
   * directory; returns the mount paths.
   */
  private List<String> layOut() throws IOException {
    List<String> mountPaths = new ArrayList<>();
    for (Object item : list(container(), "volumeMounts")) {
      Map<String, Object> mount = cast(item);
      mountPaths.add((String) mount.get("mountPath"));
    }
    for (Object item : list(container(), "volumeMounts")) {
      Map<String, Object> mount = cast(item);
      String mountPath = (String) mount.get("mountPath");
      Map<String, Object> volume = volume((String) mount.get("name"));
      Map<String, String> data;
      Map<String, Object> source;
      if (volume.containsKey("configMap")
          && isRendered("ConfigMap", str(volume, "configMap", "name"))) {
        source = map(volume, "configMap");
        data = new LinkedHashMap<>();
        for (var entry : map(named("ConfigMap", str(source, "name")), "data").entrySet()) {
          data.put(entry.getKey(), rebase((String) entry.getValue(), mountPaths));
        }
      } else if (volume.containsKey("configMap") || volume.containsKey("secret")) {
        source = volume.containsKey("secret") ? map(volume, "secret") : map(volume, "configMap");
        String name =
            volume.containsKey("secret") ? str(source, "secretName") : str(source, "name");
        assertThat(external)
            .as(
                "Secrets and ConfigMaps the test gives (the pod mounts %s, and would not start without it)",
                name)
            .containsKey(name);
        data = external.get(name);
      } else if (volume.containsKey("projected")) {
        // The kubelet's service-account tokens, each stood in for by a token naming its audience.
        source = Map.of();
        data = new LinkedHashMap<>();
        for (Object entry : list(volume, "projected", "sources")) {
          Map<String, Object> token = cast(cast(entry).get("serviceAccountToken"));
          if (token != null) {
            data.put(str(token, "path"), "kubelet-token-for-" + token.get("audience"));
          }
        }
      } else {
        Files.createDirectories(file(mountPath));
        continue;
      }
      Map<String, String> files = new LinkedHashMap<>();
      if (source.containsKey("items")) {
        for (Object entry : list(source, "items")) {
          String key = str(entry, "key");
          assertThat(data).as("the keys of volume %s", mount.get("name")).containsKey(key);
          files.put(str(entry, "path"), data.get(key));
        }
      } else {
        files.putAll(data);
      }
      if (mount.containsKey("subPath")) {
        String subPath = (String) mount.get("subPath");
        assertThat(files)
            .as("the files of volume %s (subPath)", mount.get("name"))
            .containsKey(subPath);
        write(file(mountPath), files.get(subPath));
      } else {
        for (var entry : files.entrySet()) {
          write(file(mountPath + "/" + entry.getKey()), entry.getValue());
        }
      }
    }
    return mountPaths;
  }

  /**
   * {@code text} with every absolute path inside a mount moved under the test's directory, in one
   * pass: a moved path is not moved again by a mount (such as /tmp) that it now starts with.
   */
  private String rebase(String text, List<String> mountPaths) {
    String anyMount =
        mountPaths.stream()
            .sorted(Comparator.comparing(String::length).reversed())
            .map(Pattern::quote)
            .collect(Collectors.joining("|"));
    Pattern inMount =
        Pattern.compile("(?<=^|[\\s\"'=])(?:" + anyMount + ")(?=/|$|[\\s\"'])", Pattern.MULTILINE);
    return inMount
        .matcher(text)
        .replaceAll(found -> Matcher.quoteReplacement(file(found.group()).toString()));
  }

  private static void write(Path file, String content) throws IOException {
    Files.createDirectories(file.getParent());
    Files.writeString(file, content);
  }

  private Map<String, Object> one(String kind) {
    List<Map<String, Object>> found =
        objects.stream().filter(object -> kind.equals(object.get("kind"))).toList();
    assertThat(found).as("objects of kind %s", kind).hasSize(1);
    return found.get(0);
  }

  private boolean isRendered(String kind, String name) {
    return objects.stream()
        .anyMatch(
            object ->
                kind.equals(object.get("kind")) && name.equals(get(object, "metadata", "name")));
  }

  private Map<String, Object> named(String kind, String name) {
    return objects.stream()
        .filter(
            object ->
                kind.equals(object.get("kind")) && name.equals(get(object, "metadata", "name")))
        .findFirst()
        .orElseThrow(
            () ->
                new AssertionError(
                    "no " + kind + " named " + name + " among the rendered objects"));
  }
}
