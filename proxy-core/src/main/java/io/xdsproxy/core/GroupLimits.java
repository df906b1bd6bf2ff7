package io.xdsproxy.core;

/**
 * How many node groups the proxy may open, and how many streams one group may serve, so that no
 * client's flood of groups delays another's (DESIGN invariant 12). A group counts from the moment a
 * client opens it until its idle grace ends, against that client's tenant ({@link
 * VerifiedIdentity#tenant}): its certificate's names, or its address.
 *
 * @param maxStreamsPerGroup the streams one node group may have open
 * @param maxGroups the node groups the proxy may have open, idle ones too
 * @param maxGroupsPerTenant the node groups the clients of one tenant may have opened
 */
public record GroupLimits(int maxStreamsPerGroup, int maxGroups, int maxGroupsPerTenant) {

  /** No limit: in-process tests and benchmarks. */
  public static final GroupLimits NONE =
      new GroupLimits(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE);

  public GroupLimits {
    if (maxStreamsPerGroup < 1 || maxGroups < 1 || maxGroupsPerTenant < 1) {
      throw new IllegalArgumentException("node-group limits must be positive");
    }
  }
}
