package io.xdsproxy.core;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.NodeGrouping.UngroupableNodeException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * A configurable node-group rule: the key is made of parts of the client's {@link Node}, each named
 * by a spec string:
 *
 * <ul>
 *   <li>{@code cluster}: {@code node.cluster};
 *   <li>{@code id:<regex>}: the first capture group of a regular expression found in {@code
 *       node.id} (from Istio's {@code sidecar~10.0.0.1~pod.namespace~...}, {@code
 *       id:^[^~]*~[^~]*~[^.~]*\.([^~]+)~} takes the namespace);
 *   <li>{@code metadata:<dotted.path>}: a value in {@code node.metadata};
 *   <li>{@code locality}: {@code region/zone/sub_zone}.
 * </ul>
 *
 * A client whose node lacks a part cannot be grouped, and is told which part and why.
 */
public final class NodeGroupRule implements NodeGrouping {

  /** One part of the key. */
  private interface Part {
    String valueOf(Node node) throws UngroupableNodeException;
  }

  private final List<String> specs;
  private final List<Part> parts;

  private NodeGroupRule(List<String> specs, List<Part> parts) {
    this.specs = List.copyOf(specs);
    this.parts = List.copyOf(parts);
  }

  /**
   * The rule made of {@code specs}, in order.
   *
   * @throws IllegalArgumentException naming the spec that is not one of the forms above
   */
  public static NodeGroupRule of(List<String> specs) {
    if (specs.isEmpty()) {
      throw new IllegalArgumentException("a node-group rule needs at least one part");
    }
    List<Part> parts = new ArrayList<>();
    for (String spec : specs) {
      parts.add(part(spec));
    }
    return new NodeGroupRule(specs, parts);
  }

  private static Part part(String spec) {
    if (spec.equals("cluster")) {
      return node -> {
        if (node.getCluster().isEmpty()) {
          throw ungroupable(node, "has no node.cluster");
        }
        return node.getCluster();
      };
    }
    if (spec.equals("locality")) {
      return node -> {
        if (!node.hasLocality()) {
          throw ungroupable(node, "has no node.locality");
        }
        Locality locality = node.getLocality();
        return locality.getRegion() + "/" + locality.getZone() + "/" + locality.getSubZone();
      };
    }
    if (spec.startsWith("id:")) {
      Pattern pattern;
      try {
        pattern = Pattern.compile(spec.substring("id:".length()));
      } catch (PatternSyntaxException e) {
        throw new IllegalArgumentException(
            "node-group part '" + spec + "': not a regular expression: " + e.getDescription());
      }
      if (pattern.matcher("").groupCount() < 1) {
        throw new IllegalArgumentException(
            "node-group part '" + spec + "': the expression needs a capture group");
      }
      return node -> {
        Matcher matcher = pattern.matcher(node.getId());
        if (!matcher.find() || matcher.group(1) == null || matcher.group(1).isEmpty()) {
          throw ungroupable(node, "has an id that does not match " + pattern.pattern());
        }
        return matcher.group(1);
      };
    }
    if (spec.startsWith("metadata:") && spec.length() > "metadata:".length()) {
      String path = spec.substring("metadata:".length());
      String[] fields = path.split("\\.");
      return node -> {
        Value value = Value.newBuilder().setStructValue(node.getMetadata()).build();
        for (String field : fields) {
          Struct struct = value.getStructValue();
          if (!value.hasStructValue() || !struct.containsFields(field)) {
            throw ungroupable(node, "has no node.metadata." + path);
          }
          value = struct.getFieldsOrThrow(field);
        }
        return switch (value.getKindCase()) {
          case STRING_VALUE -> value.getStringValue();
          case NUMBER_VALUE -> Double.toString(value.getNumberValue());
          case BOOL_VALUE -> Boolean.toString(value.getBoolValue());
          default ->
              throw ungroupable(
                  node, "has node.metadata." + path + " that is not a string, number or boolean");
        };
      };
    }
    throw new IllegalArgumentException(
        "node-group part '"
            + spec
            + "' is none of cluster, locality, id:<regex>, metadata:<dotted.path>");
  }

  private static UngroupableNodeException ungroupable(Node node, String why) {
    return new UngroupableNodeException(
        "node '" + node.getId() + "' " + why + ", which the node-group rule needs");
  }

  @Override
  public NodeGroupKey keyOf(Node node) throws UngroupableNodeException {
    if (parts.size() == 1) {
      return new NodeGroupKey(parts.get(0).valueOf(node));
    }
    StringBuilder key = new StringBuilder();
    for (int i = 0; i < parts.size(); i++) {
      if (i > 0) {
        key.append('|');
      }
      key.append(parts.get(i).valueOf(node));
    }
    return new NodeGroupKey(key.toString());
  }

  @Override
  public String toString() {
    return String.join(", ", specs);
  }
}
