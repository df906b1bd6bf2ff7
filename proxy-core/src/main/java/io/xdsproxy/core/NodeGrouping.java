package io.xdsproxy.core;

import io.envoyproxy.envoy.config.core.v3.Node;

/**
 * The rule that puts a client's {@link Node} into a node group. Every client of one group must be
 * entitled to exactly the same configuration, since they share one upstream session.
 */
public interface NodeGrouping {

  /**
   * The key of {@code node}'s group.
   *
   * @throws UngroupableNodeException when the node lacks what the rule needs
   */
  NodeGroupKey keyOf(Node node) throws UngroupableNodeException;

  /** The default rule: one group per {@code node.cluster}. */
  static NodeGrouping byCluster() {
    return node -> {
      if (node.getCluster().isEmpty()) {
        throw new UngroupableNodeException(
            "node '" + node.getId() + "' has no node.cluster, which the node-group rule (node.cluster) needs");
      }
      return new NodeGroupKey(node.getCluster());
    };
  }

  /** A node the rule cannot place; the message says which node and what it lacks. */
  final class UngroupableNodeException extends Exception {
    public UngroupableNodeException(String message) {
      super(message);
    }
  }
}
