package io.xdsproxy.app;

import java.time.Duration;

/**
 * What one peer may cost the xDS port's transport before any xDS is read (DESIGN invariant 12): the
 * connections it holds, and the streams a connection may reset. The limits of what a stream may ask
 * are {@link io.xdsproxy.downstream.xds.Limits}.
 *
 * @param maxConnections the connections the xDS port holds at once, from everyone; one more is
 *     closed as it is accepted. 0 for no limit
 * @param maxConnectionsPerAddress the connections one peer address may hold at once; one more is
 *     closed as it is accepted. 0 for no limit
 * @param maxStreamResetsPerConnection the RST_STREAM frames one connection may send in {@link
 *     #RESET_WINDOW} (with the streams the proxy itself resets for the client's errors); one more
 *     and the connection gets GOAWAY {@code ENHANCE_YOUR_CALM} and is closed. 0 for no limit
 */
public record TransportLimits(
    int maxConnections, int maxConnectionsPerAddress, int maxStreamResetsPerConnection) {

  /**
   * The window {@link #maxStreamResetsPerConnection} counts in: Netty's own, as its HTTP/2 server
   * builder counts by default (AbstractHttp2ConnectionHandlerBuilder, 200 RST_STREAM frames per 30
   * s). grpc-java counts from a connection's first reset and starts again with the first one after
   * the window has passed (NettyServerHandler.RstStreamCounter).
   */
  public static final Duration RESET_WINDOW = Duration.ofSeconds(30);

  /**
   * Defaults that protect a replica as deployed and never refuse a fleet it is sized for:
   *
   * <ul>
   *   <li>20,000 connections: twice the 10,000 clients a replica is planned for
   *       (deploy/SCALING.md), room for a failed peer's clients on top of its own; about 160 MiB of
   *       the default pod's 600 MiB heap at 8 KiB per idle connection (bench/RESULTS.md, "Heap per
   *       stream, round two"), where 15,000 idle connections from one address were once all taken.
   *   <li>5,000 per address: the whole load the autoscaler aims a replica at (deploy/SCALING.md)
   *       may come from one address, as clients behind one NAT, node IP (a Service's {@code
   *       externalTrafficPolicy: Cluster} SNATs to it) or an L4 balancer that hides clients'
   *       addresses do; yet one address holds at most a quarter of the port. A balancer in front of
   *       a replica past that load needs more, or 0.
   *   <li>200 stream resets per 30 s: Netty's HTTP/2 server default, which grpc-java does not apply
   *       (its NettyServerBuilder.maxRstFramesPerWindow is off unless set). An xDS client opens a
   *       stream or a few per connection and keeps them for the connection's life, so even a client
   *       restarting its streams with backoff resets a few a minute; a rapid-reset attack
   *       (CVE-2023-44487) resets thousands a second. Envoy's comparable guard drains a connection
   *       once enough of its streams have closed (500 by default) and at least half of them were
   *       reset within a second of opening (ConnectionManagerImpl::maybeDrainDueToPrematureResets);
   *       grpc-go bounds the handlers running at once rather than counting resets.
   * </ul>
   */
  public static final TransportLimits DEFAULTS = new TransportLimits(20_000, 5_000, 200);

  /** No limit: for benchmarks that open as many connections from one address as they like. */
  public static final TransportLimits NONE = new TransportLimits(0, 0, 0);

  public TransportLimits {
    if (maxConnections < 0 || maxConnectionsPerAddress < 0 || maxStreamResetsPerConnection < 0) {
      throw new IllegalArgumentException("transport limits must be 0 (none) or more");
    }
  }

  public TransportLimits withMaxConnections(int value) {
    return new TransportLimits(value, maxConnectionsPerAddress, maxStreamResetsPerConnection);
  }

  public TransportLimits withMaxConnectionsPerAddress(int value) {
    return new TransportLimits(maxConnections, value, maxStreamResetsPerConnection);
  }

  public TransportLimits withMaxStreamResetsPerConnection(int value) {
    return new TransportLimits(maxConnections, maxConnectionsPerAddress, value);
  }
}
