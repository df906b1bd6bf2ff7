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
 * @param maxNodeBytes the largest client {@code Node}, serialized: everything a stream keeps of its
 *     client for as long as it is open, and a group of its members and its upstream node ({@link
 *     NodeLimits}); past it, RESOURCE_EXHAUSTED
 * @param maxNodeMetadataBytes the largest {@code node.metadata}, serialized; past it,
 *     RESOURCE_EXHAUSTED
 * @param maxNodeMetadataDepth the deepest nesting of structs and lists in {@code node.metadata};
 *     past it, RESOURCE_EXHAUSTED
 * @param maxNodeStringLength the longest of the node's own strings (its id, cluster, user agent and
 *     locality), in characters: what becomes a group key, a log field, a metric label; past it,
 *     RESOURCE_EXHAUSTED
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
    int maxUpstreamNameBytesPerGroup,
    int maxNodeBytes,
    int maxNodeMetadataBytes,
    int maxNodeMetadataDepth,
    int maxNodeStringLength) {

  /**
   * Safely under the 4 MiB a control plane takes in one request (gRPC's default limit on an inbound
   * message, which istiod, go-control-plane and java-control-plane keep). A SotW request carries
   * its type's names (at most this), the group's node (at most {@code --max-node-bytes}) and a few
   * short fields. A Delta stream's first request after a reconnect carries the names, and in {@code
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
   *
   * <p>The node's: an Istio sidecar's whole first request, node with every Envoy extension and its
   * metadata (labels, annotations, PROXY_CONFIG), is about 23 KB (envoyproxy/envoy#15838), its
   * metadata a few KiB nested five deep, its id under 300 characters ({@code
   * sidecar~IP~pod.namespace~namespace.svc.cluster.local}). So 256 KiB a node, 64 KiB of metadata
   * 16 deep and 1,024 characters a string leave a real fleet several times its size, while a
   * thousand nodes at the limits hold 256 MiB at most, not the gibibytes 4 MiB requests could.
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
          DEFAULT_UPSTREAM_NAME_BYTES_PER_GROUP,
          256 * 1024,
          64 * 1024,
          16,
          1024);

  /**
   * No limit on anything but the request's and the node's size: for in-process benchmarks, which
   * drive streams as fast as they can.
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
          Integer.MAX_VALUE,
          DEFAULTS.maxNodeBytes,
          DEFAULTS.maxNodeMetadataBytes,
          DEFAULTS.maxNodeMetadataDepth,
          DEFAULTS.maxNodeStringLength);

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
        || maxUpstreamNameBytesPerGroup < 1
        || maxNodeBytes < 1
        || maxNodeMetadataBytes < 1
        || maxNodeMetadataDepth < 1
        || maxNodeStringLength < 1) {
      throw new IllegalArgumentException(
          "limits must be positive (per node and requests per second: 0 for none)");
    }
  }

  public Limits withMaxRequestBytes(int value) {
    return edit(b -> b.maxRequestBytes = value);
  }

  public Limits withMaxNamesPerRequest(int value) {
    return edit(b -> b.maxNamesPerRequest = value);
  }

  public Limits withMaxNameLength(int value) {
    return edit(b -> b.maxNameLength = value);
  }

  public Limits withMaxStreamsPerConnection(int value) {
    return edit(b -> b.maxStreamsPerConnection = value);
  }

  public Limits withMaxStreamsPerGroup(int value) {
    return edit(b -> b.maxStreamsPerGroup = value);
  }

  public Limits withMaxStreamsPerNode(int value) {
    return edit(b -> b.maxStreamsPerNode = value);
  }

  public Limits withRequestsPerSecond(int value) {
    return edit(b -> b.requestsPerSecond = value);
  }

  public Limits withMaxNodeGroups(int value) {
    return edit(b -> b.maxNodeGroups = value);
  }

  public Limits withMaxNodeGroupsPerClient(int value) {
    return edit(b -> b.maxNodeGroupsPerClient = value);
  }

  public Limits withMaxUpstreamNameBytesPerGroup(int value) {
    return edit(b -> b.maxUpstreamNameBytesPerGroup = value);
  }

  public Limits withMaxNodeBytes(int value) {
    return edit(b -> b.maxNodeBytes = value);
  }

  public Limits withMaxNodeMetadataBytes(int value) {
    return edit(b -> b.maxNodeMetadataBytes = value);
  }

  public Limits withMaxNodeMetadataDepth(int value) {
    return edit(b -> b.maxNodeMetadataDepth = value);
  }

  public Limits withMaxNodeStringLength(int value) {
    return edit(b -> b.maxNodeStringLength = value);
  }

  /** The limits on node groups, as {@link io.xdsproxy.core.NodeGroups} applies them. */
  public io.xdsproxy.core.GroupLimits groups() {
    return new io.xdsproxy.core.GroupLimits(
        maxStreamsPerGroup, maxNodeGroups, maxNodeGroupsPerClient, maxUpstreamNameBytesPerGroup);
  }

  /** A copy with the change {@code change} makes. */
  private Limits edit(java.util.function.Consumer<Builder> change) {
    Builder builder = new Builder(this);
    change.accept(builder);
    return builder.build();
  }

  /** The limits, to change one and build anew. */
  private static final class Builder {
    int maxRequestBytes;
    int maxNamesPerRequest;
    int maxNameLength;
    int maxStreamsPerConnection;
    int maxStreamsPerGroup;
    int maxStreamsPerNode;
    int requestsPerSecond;
    int maxNodeGroups;
    int maxNodeGroupsPerClient;
    int maxUpstreamNameBytesPerGroup;
    int maxNodeBytes;
    int maxNodeMetadataBytes;
    int maxNodeMetadataDepth;
    int maxNodeStringLength;

    Builder(Limits from) {
      maxRequestBytes = from.maxRequestBytes;
      maxNamesPerRequest = from.maxNamesPerRequest;
      maxNameLength = from.maxNameLength;
      maxStreamsPerConnection = from.maxStreamsPerConnection;
      maxStreamsPerGroup = from.maxStreamsPerGroup;
      maxStreamsPerNode = from.maxStreamsPerNode;
      requestsPerSecond = from.requestsPerSecond;
      maxNodeGroups = from.maxNodeGroups;
      maxNodeGroupsPerClient = from.maxNodeGroupsPerClient;
      maxUpstreamNameBytesPerGroup = from.maxUpstreamNameBytesPerGroup;
      maxNodeBytes = from.maxNodeBytes;
      maxNodeMetadataBytes = from.maxNodeMetadataBytes;
      maxNodeMetadataDepth = from.maxNodeMetadataDepth;
      maxNodeStringLength = from.maxNodeStringLength;
    }

    Limits build() {
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
          maxUpstreamNameBytesPerGroup,
          maxNodeBytes,
          maxNodeMetadataBytes,
          maxNodeMetadataDepth,
          maxNodeStringLength);
    }
  }
}
