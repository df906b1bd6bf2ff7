package io.xdsproxy.app;

import static io.xdsproxy.app.Flags.Flag.limit;
import static io.xdsproxy.app.Flags.Flag.transportLimit;

import io.xdsproxy.app.Flags.Flag;
import io.xdsproxy.downstream.xds.Limits;
import java.util.List;

/**
 * The flags of the limits on what one client may cost: requests, names, streams, node groups,
 * connections and its node's size. Entries of {@link Flags#ALL}, in the order {@code --help} and
 * the README list them.
 */
final class LimitFlags {

  private LimitFlags() {}

  static final List<Flag> ALL =
      List.of(
          limit(
              "max-request-bytes",
              "the largest request a client may send",
              1,
              Limits::maxRequestBytes,
              Limits::withMaxRequestBytes),
          limit(
              "max-names-per-request",
              "the most resource names in one request, and subscribed to of one type on one stream",
              1,
              Limits::maxNamesPerRequest,
              Limits::withMaxNamesPerRequest),
          limit(
              "max-name-length",
              "the longest resource name, in characters",
              1,
              Limits::maxNameLength,
              Limits::withMaxNameLength),
          limit(
              "max-streams-per-connection",
              "streams one client connection may have open",
              1,
              Limits::maxStreamsPerConnection,
              Limits::withMaxStreamsPerConnection),
          limit(
              "max-node-groups",
              "node groups the proxy may have open, idle ones too",
              1,
              Limits::maxNodeGroups,
              Limits::withMaxNodeGroups),
          limit(
              "max-node-groups-per-client",
              "node groups the clients of one certificate identity (or one address, without one) may have opened,"
                  + " idle ones too",
              1,
              Limits::maxNodeGroupsPerClient,
              Limits::withMaxNodeGroupsPerClient),
          limit(
              "max-upstream-names-bytes-per-group",
              "the bytes the resource names of one type that a node group asks its upstream for may take in one"
                  + " request; a client whose subscription would pass it is refused",
              1,
              Limits::maxUpstreamNameBytesPerGroup,
              Limits::withMaxUpstreamNameBytesPerGroup),
          limit(
              "max-streams-per-group",
              "streams one node group may have open",
              1,
              Limits::maxStreamsPerGroup,
              Limits::withMaxStreamsPerGroup),
          limit(
              "max-streams-per-node",
              "streams one node id may have open, 0 for no limit",
              0,
              Limits::maxStreamsPerNode,
              Limits::withMaxStreamsPerNode),
          limit(
              "max-requests-per-second",
              "the rate a stream's requests are read at, at most; 0 for no limit",
              0,
              Limits::requestsPerSecond,
              Limits::withRequestsPerSecond),
          transportLimit(
              "max-connections",
              "connections the xDS port holds at once; one more is closed as it is accepted; 0 for no"
                  + " limit",
              TransportLimits::maxConnections,
              TransportLimits::withMaxConnections),
          transportLimit(
              "max-connections-per-address",
              "connections one client address may hold on the xDS port; one more is closed as it is"
                  + " accepted; 0 for no limit",
              TransportLimits::maxConnectionsPerAddress,
              TransportLimits::withMaxConnectionsPerAddress),
          transportLimit(
              "max-stream-resets-per-connection",
              "streams one client connection may reset in "
                  + TransportLimits.RESET_WINDOW.toSeconds()
                  + "s (RST_STREAM); past it, GOAWAY ENHANCE_YOUR_CALM and the connection is"
                  + " closed; 0 for no limit",
              TransportLimits::maxStreamResetsPerConnection,
              TransportLimits::withMaxStreamResetsPerConnection),
          limit(
              "max-node-bytes",
              "the largest node a client may name, serialized, in bytes",
              1,
              Limits::maxNodeBytes,
              Limits::withMaxNodeBytes),
          limit(
              "max-node-metadata-bytes",
              "the largest node.metadata, serialized, in bytes",
              1,
              Limits::maxNodeMetadataBytes,
              Limits::withMaxNodeMetadataBytes),
          limit(
              "max-node-metadata-depth",
              "the deepest nesting of structs and lists in node.metadata",
              1,
              Limits::maxNodeMetadataDepth,
              Limits::withMaxNodeMetadataDepth),
          limit(
              "max-node-string-length",
              "the longest node id, cluster, user agent or locality, in characters",
              1,
              Limits::maxNodeStringLength,
              Limits::withMaxNodeStringLength));
}
