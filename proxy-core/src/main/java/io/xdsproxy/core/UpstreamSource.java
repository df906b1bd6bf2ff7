package io.xdsproxy.core;

import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Where node groups get their resources: a control plane over ADS, or a directory of files. Opens
 * one {@link UpstreamSession} per node group.
 */
public interface UpstreamSource extends AutoCloseable {

  /**
   * Opens the session of one node group. Updates reach {@code listener} on the source's threads.
   *
   * @param node the node the upstream sees for this group
   * @param tenant who opened the group ({@link VerifiedIdentity#tenant}): the session's streams
   *     take that tenant's turns when they wait to start, so that one tenant's flood of groups
   *     delays no other's
   */
  UpstreamSession open(NodeGroupKey group, Node node, String tenant, UpstreamListener listener);

  /** Where the resources come from, for the log line at start and for status pages. */
  String describe();

  /**
   * Whether the upstream has been reached at least once (readiness: a replica that never has is not
   * ready).
   */
  boolean reached();

  /**
   * Whether {@link #audit} can tell what the upstream would send one node: a control plane can; a
   * directory serves every node the same files, so there is nothing to audit.
   */
  default boolean auditable() {
    return false;
  }

  /**
   * Asks the upstream, once, what it would send {@code node} of {@code wanted}, on a short session
   * of its own beside the groups' (nothing of it reaches a group's store), and closes it when every
   * type has answered, every name asked for with it, or at the not-found timeout. A type not
   * answered at all by then is left out; a name asked for that its type's answers did not bring
   * does not exist for the node, as "Knowing When a Requested Resource Does Not Exist" has it. The
   * future fails when the session does (the upstream unreachable, the stream ended). For the group
   * audit: whether a member of a group is entitled to the group's configuration.
   *
   * @param wanted per type, what to subscribe to: a wildcard, or names
   */
  default CompletableFuture<Map<TypeUrl, AuditedType>> audit(
      Node node, Map<TypeUrl, Interest> wanted) {
    return CompletableFuture.failedFuture(
        new UnsupportedOperationException(describe() + " serves every node the same resources"));
  }

  /**
   * What the upstream answered a one-shot {@link #audit} for one type.
   *
   * @param resources what it sent, by name; with a wildcard, every resource of the type the node
   *     has
   */
  record AuditedType(TypeUrl type, Map<String, XdsResource> resources) {
    public AuditedType {
      resources = Map.copyOf(resources);
    }
  }

  @Override
  void close();

  /** Receives what the upstream sends for one group. */
  @FunctionalInterface
  interface UpstreamListener {
    void onUpdate(ResourceUpdate update);

    /** Several types changed together (a filesystem rescan): clients see them as one change. */
    default void onUpdates(List<ResourceUpdate> updates) {
      updates.forEach(this::onUpdate);
    }
  }

  /**
   * One node group's view of the upstream. Its methods are called from the group's executor only,
   * one at a time.
   */
  interface UpstreamSession {

    /**
     * From now on the group wants {@code interest} of {@code type}; {@link Interest#NONE} to stop.
     */
    void updateInterest(TypeUrl type, Interest interest);

    /**
     * Asks the upstream to send {@code type}'s resources again: a new client wants some the proxy
     * was told not to cache ({@code do_not_cache}), so it may not serve them from its store.
     */
    void refetch(TypeUrl type);

    void close();
  }
}
