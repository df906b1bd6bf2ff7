package io.xdsproxy.downstream.xds;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.ClientStrings;
import java.util.Optional;

/**
 * The sizes a client's {@link Node} may have (DESIGN invariant 12: a client's cost is bounded), as
 * {@link Limits} set them; checked when a stream or a REST poll first names its node, before the
 * node is grouped or kept anywhere. A stream keeps its node while it is open (for client status), a
 * group keeps its upstream node and a few recent members' for as long as it lives, and the node's
 * strings become the group key, log fields and metric labels: so each is bounded before any of
 * that.
 *
 * <p>What is bounded, and why so: the whole node's serialized size covers every field the proxy
 * only keeps and passes on (Envoy's {@code extensions}, {@code client_features}, {@code
 * listening_addresses}, {@code dynamic_parameters}, {@code user_agent_build_version}, and unknown
 * fields), whose count alone means nothing; the metadata's size and nesting separately, as it is
 * what varies most from one fleet to another and what a group key rule and the group audit read;
 * the length of each string the proxy reads on its own (id, cluster, user agent, locality), which
 * name the node in every log line and may make its group key.
 */
final class NodeLimits {

  /** Why a node is refused: the limit, one of {@link StreamMetrics#LIMITS}, and what to tell. */
  record Refusal(String limit, String why) {}

  private NodeLimits() {}

  /** Empty when {@code node} is within {@code limits}; else the first limit it is past. */
  static Optional<Refusal> refusal(Node node, Limits limits) {
    Optional<Refusal> string = longString(node, limits.maxNodeStringLength());
    if (string.isPresent()) {
      return string;
    }
    int bytes = node.getSerializedSize();
    if (bytes > limits.maxNodeBytes()) {
      return refused(
          "node_bytes",
          node,
          "is " + bytes + " bytes, more than the " + limits.maxNodeBytes() + " allowed",
          "--max-node-bytes");
    }
    int metadataBytes = node.getMetadata().getSerializedSize();
    if (metadataBytes > limits.maxNodeMetadataBytes()) {
      return refused(
          "node_metadata_bytes",
          node,
          "has "
              + metadataBytes
              + " bytes of node.metadata, more than the "
              + limits.maxNodeMetadataBytes()
              + " allowed",
          "--max-node-metadata-bytes");
    }
    if (node.hasMetadata() && deeperThan(node.getMetadata(), 1, limits.maxNodeMetadataDepth())) {
      return refused(
          "node_metadata_depth",
          node,
          "has node.metadata with structs and lists nested more than "
              + limits.maxNodeMetadataDepth()
              + " deep",
          "--max-node-metadata-depth");
    }
    return Optional.empty();
  }

  /** The first of the node's own strings longer than {@code max} characters, refused. */
  private static Optional<Refusal> longString(Node node, int max) {
    Locality locality = node.getLocality();
    String[][] strings = {
      {"id", node.getId()},
      {"cluster", node.getCluster()},
      {"user_agent_name", node.getUserAgentName()},
      {"user_agent_version", node.getUserAgentVersion()},
      {"locality.region", locality.getRegion()},
      {"locality.zone", locality.getZone()},
      {"locality.sub_zone", locality.getSubZone()}
    };
    for (String[] field : strings) {
      if (field[1].length() > max) {
        return refused(
            "node_string_length",
            node,
            "has a node."
                + field[0]
                + " of "
                + field[1].length()
                + " characters, more than the "
                + max
                + " allowed",
            "--max-node-string-length");
      }
    }
    return Optional.empty();
  }

  /**
   * Whether {@code struct}, at nesting {@code depth} (the metadata itself is 1), holds structs or
   * lists nested deeper than {@code max}. It stops at the first too deep, so it never walks further
   * than {@code max} levels.
   */
  private static boolean deeperThan(Struct struct, int depth, int max) {
    if (depth > max) {
      return true;
    }
    for (Value value : struct.getFieldsMap().values()) {
      if (deeperThan(value, depth, max)) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code value}, held at nesting {@code depth}, nests deeper than {@code max}. */
  private static boolean deeperThan(Value value, int depth, int max) {
    return switch (value.getKindCase()) {
      case STRUCT_VALUE -> deeperThan(value.getStructValue(), depth + 1, max);
      case LIST_VALUE -> {
        if (depth + 1 > max) {
          yield true;
        }
        for (Value item : value.getListValue().getValuesList()) {
          if (deeperThan(item, depth + 1, max)) {
            yield true;
          }
        }
        yield false;
      }
      default -> false;
    };
  }

  /**
   * Refused for {@code limit}: the node, by its id cut and escaped, {@code what} it is, the flag.
   */
  private static Optional<Refusal> refused(String limit, Node node, String what, String flag) {
    return Optional.of(
        new Refusal(
            limit, "node '" + ClientStrings.shown(node.getId()) + "' " + what + " (" + flag + ")"));
  }
}
