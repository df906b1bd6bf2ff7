package io.xdsproxy.core;

import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.List;

/**
 * The rule that puts a client into a node group, from its {@link Node} and what its connection
 * proved ({@link VerifiedIdentity}). Every client of one group must be entitled to exactly the same
 * configuration, since they share one upstream session: so the parts of a key that decide
 * entitlement must come from what was verified, not from what a client claims (DESIGN, "Node
 * group").
 */
public interface NodeGrouping {

  /**
   * The key of the group of a client with {@code node} and {@code identity}.
   *
   * @throws UngroupableNodeException when the node lacks what the rule needs
   * @throws NotEntitledException when the identity proves no group, or the node claims a group its
   *     identity contradicts
   */
  NodeGroupKey keyOf(Node node, VerifiedIdentity identity) throws UngroupableNodeException;

  /** The key of a client whose connection proves nothing. */
  default NodeGroupKey keyOf(Node node) throws UngroupableNodeException {
    return keyOf(node, VerifiedIdentity.ANONYMOUS);
  }

  /**
   * The parts of the key a client chooses freely, as their specs: the ones no certificate binds.
   *
   * @param nodeIdVerified whether the node id is itself verified (the node id pattern is {@code
   *     {san}} alone, so the whole id is a name of the certificate): then parts read from the id
   *     are bound too
   */
  List<String> claimedParts(boolean nodeIdVerified);

  /** The default rule: one group per {@code node.cluster}. */
  static NodeGrouping byCluster() {
    return NodeGroupRule.of(List.of("cluster"));
  }

  /** A node the rule cannot place; the message says which node and what it lacks. */
  class UngroupableNodeException extends Exception {
    public UngroupableNodeException(String message) {
      super(message);
    }
  }

  /**
   * A client whose verified identity entitles it to no group, or to another group than its node
   * claims: refused, as istiod refuses a node whose namespace or service account disagree with its
   * SPIFFE id.
   */
  final class NotEntitledException extends UngroupableNodeException {
    private final boolean memberMismatch;

    public NotEntitledException(String message) {
      this(message, false);
    }

    /**
     * @param memberMismatch whether the client's node may not share its group's upstream node
     *     ({@link UpstreamNodes#mismatch}), rather than its identity proving no group
     */
    public NotEntitledException(String message, boolean memberMismatch) {
      super(message);
      this.memberMismatch = memberMismatch;
    }

    public boolean memberMismatch() {
      return memberMismatch;
    }
  }
}
