package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.Status;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.NodeGrouping.NotEntitledException;
import io.xdsproxy.core.NodeGrouping.UngroupableNodeException;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.VerifiedIdentity;
import java.util.Collection;
import java.util.Optional;

/**
 * The checks and {@link Limits} a stream passes before it is served, and each request after (DESIGN
 * invariants 7, 11, 12): the node it may be and the group its certificate entitles it to ({@link
 * Access}), the streams of its node and of its group, the groups it may open, the types it may be
 * served, the names a request carries and how long they are. A check that fails throws {@link
 * Refused}, which says with what status the stream is ended and why, for the client and the log.
 */
record Admission(Limits limits, Access access, Clients clients, NodeGroups groups) {

  /** Why a stream is refused: the kind tells how it is counted and logged. */
  enum Kind {
    /** The client may not be the node it names: not a limit. */
    NODE_ID,
    /**
     * Its certificate entitles it to no group, or not to what it asks (Secrets), or its node may
     * not share its group's upstream node.
     */
    NOT_ENTITLED,
    /** Past a limit: counted in {@code xds_downstream_limited_total} by {@link Refused#limit}. */
    LIMIT,
    /** Its node cannot be placed in a group. */
    UNGROUPABLE
  }

  /** A stream refused, to be ended with {@link #status}. */
  static final class Refused extends Exception {
    private final Kind kind;
    private final String limit;
    private final transient Status status;

    private Refused(Kind kind, String limit, Status status) {
      super(status.getDescription(), null, false, false);
      this.kind = kind;
      this.limit = limit;
      this.status = status;
    }

    static Refused limit(String limit, Status code, String why) {
      return new Refused(Kind.LIMIT, limit, code.withDescription(why));
    }

    Kind kind() {
      return kind;
    }

    /**
     * The limit gone past, one of {@link StreamMetrics#LIMITS}; for {@link Kind#NODE_ID} and {@link
     * Kind#NOT_ENTITLED} the reason, one of {@link StreamMetrics#DENIALS}; null for another kind.
     */
    String counted() {
      return limit;
    }

    Status status() {
      return status;
    }
  }

  /**
   * Counts a stream among the streams of {@code node} ({@link Clients#admit}), if the node is
   * within the sizes a node may have ({@link NodeLimits}), its client may be that node and the node
   * has fewer than {@code --max-streams-per-node}; the caller {@linkplain Clients#dismiss
   * dismisses} it when it ends.
   */
  void count(Node node, VerifiedIdentity identity) throws Refused {
    Optional<NodeLimits.Refusal> tooLarge = NodeLimits.refusal(node, limits);
    if (tooLarge.isPresent()) {
      throw Refused.limit(tooLarge.get().limit(), Status.RESOURCE_EXHAUSTED, tooLarge.get().why());
    }
    Optional<String> refusal = access.nodeIdRefusal(node.getId(), identity);
    if (refusal.isPresent()) {
      throw new Refused(
          Kind.NODE_ID, "node_id", Status.PERMISSION_DENIED.withDescription(refusal.get()));
    }
    int perNode = limits.maxStreamsPerNode();
    if (!clients.admit(node.getId(), perNode == 0 ? Integer.MAX_VALUE : perNode)) {
      throw Refused.limit(
          "streams_per_node",
          Status.RESOURCE_EXHAUSTED,
          "node '"
              + node.getId()
              + "' has "
              + perNode
              + " streams open already, the most one node may have (--max-streams-per-node)");
    }
  }

  /**
   * The group of a client with {@code node} and {@code identity}, held for the stream until it
   * {@linkplain NodeGroups#release releases} it.
   */
  NodeGroup join(Node node, VerifiedIdentity identity) throws Refused {
    try {
      return groups.acquire(node, identity, limits.groups());
    } catch (NotEntitledException e) {
      throw notEntitled(e.memberMismatch() ? "upstream_node" : "identity", e.getMessage());
    } catch (UngroupableNodeException e) {
      throw new Refused(
          Kind.UNGROUPABLE, null, Status.FAILED_PRECONDITION.withDescription(e.getMessage()));
    } catch (NodeGroups.GroupFullException e) {
      throw groupFull(e, node.getId());
    }
  }

  /**
   * A stream of {@code nodeId} refused for a limit of its group: opening or joining it, or asking
   * more of its upstream ({@link io.xdsproxy.core.GroupWatcher#onRefused}).
   */
  static Refused groupFull(NodeGroups.GroupFullException e, String nodeId) {
    return Refused.limit(
        e.limit(),
        Status.RESOURCE_EXHAUSTED,
        e.getMessage() + " (node '" + nodeId + "'; " + e.flag() + ")");
  }

  /** Checks that a client with {@code identity} may be served resources of {@code type}. */
  void type(TypeUrl type, VerifiedIdentity identity, String nodeId) throws Refused {
    Optional<String> refusal = access.typeRefusal(type, identity, nodeId);
    if (refusal.isPresent()) {
      throw notEntitled("secrets", refusal.get());
    }
  }

  private static Refused notEntitled(String reason, String why) {
    return new Refused(Kind.NOT_ENTITLED, reason, Status.PERMISSION_DENIED.withDescription(why));
  }

  /**
   * Checks the resource names of a request: how many it carries ({@code count}), RESOURCE_EXHAUSTED
   * past the maximum, and how long each of {@code names} is, INVALID_ARGUMENT past the maximum.
   */
  @SafeVarargs
  final void names(String nodeId, TypeUrl type, int count, Collection<String>... names)
      throws Refused {
    if (count > limits.maxNamesPerRequest()) {
      throw tooManyNames(
          nodeId, "a request for " + type.shortName() + " names " + count + " resources");
    }
    int longest = limits.maxNameLength();
    for (Collection<String> some : names) {
      for (String name : some) {
        if (name.length() > longest) {
          throw Refused.limit(
              "name_length",
              Status.INVALID_ARGUMENT,
              "a resource name of "
                  + type.shortName()
                  + " is "
                  + name.length()
                  + " characters long, more than the "
                  + longest
                  + " allowed: '"
                  + name.substring(0, Math.min(64, longest))
                  + "…' (node '"
                  + nodeId
                  + "'; --max-name-length)");
        }
      }
    }
  }

  /** Checks that a stream subscribed to {@code count} names of {@code type} is within the limit. */
  void subscription(String nodeId, TypeUrl type, int count) throws Refused {
    if (count > limits.maxNamesPerRequest()) {
      throw tooManyNames(
          nodeId,
          "the stream would be subscribed to " + count + " " + type.shortName() + " resources");
    }
  }

  /** Past the most names one request may carry, or one stream be subscribed to of one type. */
  private Refused tooManyNames(String nodeId, String what) {
    return Refused.limit(
        "names_per_request",
        Status.RESOURCE_EXHAUSTED,
        what
            + ", more than the "
            + limits.maxNamesPerRequest()
            + " allowed (node '"
            + nodeId
            + "'; --max-names-per-request)");
  }
}
