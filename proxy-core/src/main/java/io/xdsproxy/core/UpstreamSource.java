package io.xdsproxy.core;

import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.List;

/**
 * Where node groups get their resources: a control plane over ADS, or a directory of files. Opens
 * one {@link UpstreamSession} per node group.
 */
public interface UpstreamSource extends AutoCloseable {

  /**
   * Opens the session of one node group. Updates reach {@code listener} on the source's threads.
   *
   * @param node the node the upstream sees for this group
   */
  UpstreamSession open(NodeGroupKey group, Node node, UpstreamListener listener);

  /** Where the resources come from, for the log line at start and for status pages. */
  String describe();

  /**
   * Whether the upstream has been reached at least once (readiness: a replica that never has is not
   * ready).
   */
  boolean reached();

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
