package io.xdsproxy.core;

/**
 * How many node groups the proxy may open, how many streams one group may serve, and how much one
 * group may ask of its upstream, so that no client's flood of groups delays another's, and no
 * member's subscription stops its group's upstream session (DESIGN invariant 12). A group counts
 * from the moment a client opens it until its idle grace ends, against that client's tenant ({@link
 * VerifiedIdentity#tenant}): its certificate's names, or its address.
 *
 * @param maxStreamsPerGroup the streams one node group may have open
 * @param maxGroups the node groups the proxy may have open, idle ones too
 * @param maxGroupsPerTenant the node groups the clients of one tenant may have opened
 * @param maxUpstreamNameBytesPerGroup the bytes the resource names of one type that a group asks
 *     its upstream for may take in a request, framing included ({@link GroupInterest}); a group
 *     keeps the bound it was opened with
 */
public record GroupLimits(
    int maxStreamsPerGroup,
    int maxGroups,
    int maxGroupsPerTenant,
    int maxUpstreamNameBytesPerGroup) {

  /** No limit: in-process tests and benchmarks. */
  public static final GroupLimits NONE =
      new GroupLimits(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE);

  public GroupLimits {
    if (maxStreamsPerGroup < 1
        || maxGroups < 1
        || maxGroupsPerTenant < 1
        || maxUpstreamNameBytesPerGroup < 1) {
      throw new IllegalArgumentException("node-group limits must be positive");
    }
  }
}
