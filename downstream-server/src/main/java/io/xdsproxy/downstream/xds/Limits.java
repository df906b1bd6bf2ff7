package io.xdsproxy.downstream.xds;

/**
 * What one client may ask of the proxy, so that no client, hostile or stuck in a loop, takes what
 * the others need (DESIGN invariant 7). A client past a limit is told so with a gRPC status naming
 * the limit, its node and the flag that sets it, and is counted in {@code
 * xds_downstream_limited_total}; except past the request rate, where its requests are only read
 * more slowly.
 *
 * @param maxRequestBytes the largest request message; gRPC ends a stream that sends a larger one
 *     with RESOURCE_EXHAUSTED
 * @param maxNamesPerRequest the most resource names one request may carry (SotW {@code
 *     resource_names}; Delta's subscriptions, unsubscriptions and initial versions together), and
 *     the most one stream may be subscribed to of one type; past it, RESOURCE_EXHAUSTED
 * @param maxNameLength the longest resource name, in characters; past it, INVALID_ARGUMENT
 * @param maxStreamsPerConnection the streams one client connection may have open at once (HTTP/2
 *     SETTINGS_MAX_CONCURRENT_STREAMS: a client waits for one to close, or has a stream refused)
 * @param maxStreamsPerGroup the streams one node group may have open on this replica; past it,
 *     RESOURCE_EXHAUSTED
 * @param maxStreamsPerNode the streams one node id may have open at once, 0 for no limit: some
 *     fleets give every client of a deployment one node id; past it, RESOURCE_EXHAUSTED
 * @param requestsPerSecond the rate a stream's requests are read at, at most, on average, 0 for no
 *     limit; twice as many may come at once
 * @param maxNodeGroups the node groups the proxy may have open, idle ones too; a stream that would
 *     open one more is ended with RESOURCE_EXHAUSTED
 * @param maxNodeGroupsPerClient the node groups the clients of one certificate identity (or one
 *     address, without certificates) may have opened, idle ones too
 * @param maxUpstreamNameBytesPerGroup the bytes the resource names of one type a node group asks
 *     its upstream for may take in one request, as the request carries them (each name's UTF-8
 *     bytes, tag and length); a stream whose subscription would take its group past it is ended
 *     with RESOURCE_EXHAUSTED, and the group asks nothing of that subscription upstream
 */
public record Limits(
    int maxRequestBytes,
    int maxNamesPerRequest,
    int maxNameLength,
    int maxStreamsPerConnection,
    int maxStreamsPerGroup,
    int maxStreamsPerNode,
    int requestsPerSecond,
    int maxNodeGroups,
    int maxNodeGroupsPerClient,
    int maxUpstreamNameBytesPerGroup) {

  /**
   * Safely under the 4 MiB a control plane takes in one request (gRPC's default limit on an inbound
   * message, which istiod, go-control-plane and java-control-plane keep). A SotW request carries
   * its type's names (at most this), the group's node (a few KiB in practice) and a few short
   * fields. A Delta stream's first request after a reconnect carries the names, and in {@code
   * initial_resource_versions} each name held again with its version: about twice this plus the
   * versions, which at every control plane modelled are shorter than the names; 2.5 MiB for names
   * of 60 characters. 1 MiB is about 16,000 such names, a large mesh's assignments asked for by
   * name.
   */
  static final int DEFAULT_UPSTREAM_NAME_BYTES_PER_GROUP = 1024 * 1024;

  /**
   * Generous for real fleets: a mesh of 20,000 services asks for 20,000 names, Envoy opens one ADS
   * stream (a few with per-type services), and at startup it sends a few dozen requests in a
   * second.
   */
  public static final Limits DEFAULTS =
      new Limits(
          4 * 1024 * 1024,
          50_000,
          4096,
          100,
          100_000,
          0,
          100,
          10_000,
          100,
          DEFAULT_UPSTREAM_NAME_BYTES_PER_GROUP);

  /**
   * No limit on anything but the request size: for in-process benchmarks, which drive streams as
   * fast as they can.
   */
  public static final Limits NONE =
      new Limits(
          DEFAULTS.maxRequestBytes,
          Integer.MAX_VALUE,
          Integer.MAX_VALUE,
          Integer.MAX_VALUE,
          Integer.MAX_VALUE,
          0,
          0,
          Integer.MAX_VALUE,
          Integer.MAX_VALUE,
          Integer.MAX_VALUE);

  public Limits {
    if (maxRequestBytes < 1
        || maxNamesPerRequest < 1
        || maxNameLength < 1
        || maxStreamsPerConnection < 1
        || maxStreamsPerGroup < 1
        || maxStreamsPerNode < 0
        || requestsPerSecond < 0
        || maxNodeGroups < 1
        || maxNodeGroupsPerClient < 1
        || maxUpstreamNameBytesPerGroup < 1) {
      throw new IllegalArgumentException(
          "limits must be positive (per node and requests per second: 0 for none)");
    }
  }

  public Limits withMaxRequestBytes(int value) {
    return new Limits(
        value,
        maxNamesPerRequest,
        maxNameLength,
        maxStreamsPerConnection,
        maxStreamsPerGroup,
        maxStreamsPerNode,
        requestsPerSecond,
        maxNodeGroups,
        maxNodeGroupsPerClient,
        maxUpstreamNameBytesPerGroup);
  }

  public Limits withMaxNamesPerRequest(int value) {
    return new Limits(
        maxRequestBytes,
        value,
        maxNameLength,
        maxStreamsPerConnection,
        maxStreamsPerGroup,
        maxStreamsPerNode,
        requestsPerSecond,
        maxNodeGroups,
        maxNodeGroupsPerClient,
        maxUpstreamNameBytesPerGroup);
  }

  public Limits withMaxNameLength(int value) {
    return new Limits(
        maxRequestBytes,
        maxNamesPerRequest,
        value,
        maxStreamsPerConnection,
        maxStreamsPerGroup,
        maxStreamsPerNode,
        requestsPerSecond,
        maxNodeGroups,
        maxNodeGroupsPerClient,
        maxUpstreamNameBytesPerGroup);
  }

  public Limits withMaxStreamsPerConnection(int value) {
    return new Limits(
        maxRequestBytes,
        maxNamesPerRequest,
        maxNameLength,
        value,
        maxStreamsPerGroup,
        maxStreamsPerNode,
        requestsPerSecond,
        maxNodeGroups,
        maxNodeGroupsPerClient,
        maxUpstreamNameBytesPerGroup);
  }

  public Limits withMaxStreamsPerGroup(int value) {
    return new Limits(
        maxRequestBytes,
        maxNamesPerRequest,
        maxNameLength,
        maxStreamsPerConnection,
        value,
        maxStreamsPerNode,
        requestsPerSecond,
        maxNodeGroups,
        maxNodeGroupsPerClient,
        maxUpstreamNameBytesPerGroup);
  }

  public Limits withMaxStreamsPerNode(int value) {
    return new Limits(
        maxRequestBytes,
        maxNamesPerRequest,
        maxNameLength,
        maxStreamsPerConnection,
        maxStreamsPerGroup,
        value,
        requestsPerSecond,
        maxNodeGroups,
        maxNodeGroupsPerClient,
        maxUpstreamNameBytesPerGroup);
  }

  public Limits withRequestsPerSecond(int value) {
    return new Limits(
        maxRequestBytes,
        maxNamesPerRequest,
        maxNameLength,
        maxStreamsPerConnection,
        maxStreamsPerGroup,
        maxStreamsPerNode,
        value,
        maxNodeGroups,
        maxNodeGroupsPerClient,
        maxUpstreamNameBytesPerGroup);
  }

  public Limits withMaxNodeGroups(int value) {
    return new Limits(
        maxRequestBytes,
        maxNamesPerRequest,
        maxNameLength,
        maxStreamsPerConnection,
        maxStreamsPerGroup,
        maxStreamsPerNode,
        requestsPerSecond,
        value,
        maxNodeGroupsPerClient,
        maxUpstreamNameBytesPerGroup);
  }

  public Limits withMaxNodeGroupsPerClient(int value) {
    return new Limits(
        maxRequestBytes,
        maxNamesPerRequest,
        maxNameLength,
        maxStreamsPerConnection,
        maxStreamsPerGroup,
        maxStreamsPerNode,
        requestsPerSecond,
        maxNodeGroups,
        value,
        maxUpstreamNameBytesPerGroup);
  }

  public Limits withMaxUpstreamNameBytesPerGroup(int value) {
    return new Limits(
        maxRequestBytes,
        maxNamesPerRequest,
        maxNameLength,
        maxStreamsPerConnection,
        maxStreamsPerGroup,
        maxStreamsPerNode,
        requestsPerSecond,
        maxNodeGroups,
        maxNodeGroupsPerClient,
        value);
  }

  /** The limits on node groups, as {@link io.xdsproxy.core.NodeGroups} applies them. */
  public io.xdsproxy.core.GroupLimits groups() {
    return new io.xdsproxy.core.GroupLimits(
        maxStreamsPerGroup, maxNodeGroups, maxNodeGroupsPerClient, maxUpstreamNameBytesPerGroup);
  }
}
