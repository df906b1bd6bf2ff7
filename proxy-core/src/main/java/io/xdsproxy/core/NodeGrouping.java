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
    return NodeGroupRule.of(java.util.List.of("cluster"));
  }

  /** A node the rule cannot place; the message says which node and what it lacks. */
  final class UngroupableNodeException extends Exception {
    public UngroupableNodeException(String message) {
      super(message);
    }
  }
}
