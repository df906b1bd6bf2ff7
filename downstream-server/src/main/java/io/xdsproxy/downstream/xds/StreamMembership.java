package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.Status;
import io.xdsproxy.core.ClientStrings;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.VerifiedIdentity;
import java.util.Collection;

/**
 * Who one stream's client is and what it may be served: what its connection proved ({@link
 * VerifiedIdentity}), the node its first request names, and the node group {@link Admission} lets
 * it join, held until the stream ends; each later request's names and types are checked against the
 * same. A check that fails ends the stream, counted and logged by its kind. Confined to the
 * stream's executor, as the stream's own state.
 */
final class StreamMembership {

  private final ClientStream<?, ?> stream;
  private final ServerContext serving;
  private final Admission admission;

  /**
   * What the client's connection proved: what the stream may serve is decided from it, never from
   * the node's claims.
   */
  private final VerifiedIdentity identity;

  private Node node;

  /** The stream counts among the streams of this node id ({@link Clients#admit}) until it ends. */
  private boolean admitted;

  private String nodeId;
  private NodeGroup group;

  StreamMembership(ClientStream<?, ?> stream, ServerContext serving, VerifiedIdentity identity) {
    this.stream = stream;
    this.serving = serving;
    this.identity = identity;
    this.admission =
        new Admission(serving.limits(), serving.access(), serving.clients(), serving.groups());
  }

  /**
   * Checks the node of a request: the first must carry one, which places the stream in its node
   * group ({@link Admission}); a later one may leave it out but must not name another node ("Basic
   * Protocol Overview"). Returns false when the stream was ended for it.
   */
  boolean identify(boolean hasNode, Node requestNode) {
    if (node == null) {
      if (!hasNode) {
        stream.fail(
            Status.INVALID_ARGUMENT.withDescription(
                "the first request on a stream must carry the node"));
        return false;
      }
      try {
        admission.count(requestNode, identity);
        admitted = true;
        nodeId = requestNode.getId();
        group = admission.join(requestNode, identity);
      } catch (Admission.Refused e) {
        refuse(e);
        return false;
      }
      node = requestNode;
      serving.events().opened(stream);
      serving.clients().opened(stream);
    } else if (hasNode && !requestNode.equals(node)) {
      // "The node identifier should always be identical if present more than once on the stream."
      stream.fail(
          Status.INVALID_ARGUMENT.withDescription(
              "node changed mid-stream: the stream began as node '"
                  + node.getId()
                  + "', a later request names node '"
                  + ClientStrings.shown(requestNode.getId())
                  + "'"));
      return false;
    }
    return true;
  }

  /**
   * Checks the resource names of a request against the limits ({@link Admission#names}). Returns
   * false when the stream was ended for them.
   */
  @SafeVarargs
  final boolean namesWithinLimits(TypeUrl type, int count, Collection<String>... names) {
    try {
      admission.names(nodeId, type, count, names);
      return true;
    } catch (Admission.Refused e) {
      refuse(e);
      return false;
    }
  }

  /**
   * Whether a subscription of {@code count} names of {@code type} is within the limit; ends the
   * stream if not.
   */
  boolean subscriptionWithinLimits(TypeUrl type, int count) {
    try {
      admission.subscription(nodeId, type, count);
      return true;
    } catch (Admission.Refused e) {
      refuse(e);
      return false;
    }
  }

  /**
   * Whether the client may be served {@code type} ({@link Admission#type}: Secrets only to whom its
   * certificate entitles); ends the stream if not.
   */
  boolean entitledTo(TypeUrl type) {
    try {
      admission.type(type, identity, nodeId);
      return true;
    } catch (Admission.Refused e) {
      refuse(e);
      return false;
    }
  }

  /**
   * The group refused a subscription of the stream ({@link NodeGroups.GroupFullException}): the
   * stream ends, counted and logged as past that limit.
   */
  void refused(NodeGroups.GroupFullException refusal) {
    refuse(Admission.groupFull(refusal, nodeId));
  }

  /** Ends the stream as {@code refused} says, counted and logged, in one line, by its kind. */
  private void refuse(Admission.Refused refused) {
    StreamEvents events = serving.events();
    switch (refused.kind()) {
      case LIMIT -> events.refused(stream, refused.counted(), refused.status().getDescription());
      case UNGROUPABLE -> events.ungroupable(stream, refused.status().getDescription());
      case NODE_ID, NOT_ENTITLED ->
          events.denied(stream, refused.counted(), refused.status().getDescription());
    }
    stream.close(refused.status());
  }

  /**
   * The stream ended: it no longer counts among its node's streams nor holds its group; {@code why}
   * is logged (null: said already).
   */
  void leave(String why) {
    if (admitted) {
      serving.clients().dismiss(nodeId);
    }
    if (group != null) {
      serving.clients().closed(stream);
      group.leave(stream);
      serving.groups().release(group);
      serving.events().closed(stream, why);
    }
  }

  VerifiedIdentity identity() {
    return identity;
  }

  /** The client's node, once its first request was admitted. */
  Node node() {
    return node;
  }

  /** The node id, once the first request named it: for logs. */
  String nodeId() {
    return nodeId;
  }

  /** The stream's node group, once its first request was admitted. */
  NodeGroup group() {
    return group;
  }
}
