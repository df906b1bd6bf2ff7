package io.xdsproxy.app;

import io.grpc.ServerCredentials;
import io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The xDS port's transport, below gRPC's calls: its event loops, its credentials (TLS or plaintext,
 * and the HPACK table it asks clients for), and the {@link TransportLimits} that bound what one
 * peer costs it before a stream is read: connections in all and per address ({@link
 * ConnectionCounts}, refused at accept by {@link LimitedServerChannel}), and stream resets per
 * connection ({@link StreamResetLimit}); how long a connection lives, and what it may ask of the
 * server's HTTP/2 (the size of its requests, its streams, its pings).
 */
final class XdsTransport {
  private XdsTransport() {}

  /**
   * How long a connection past its maximum age keeps its streams after GOAWAY: xDS streams never
   * end by themselves.
   */
  static final Duration CONNECTION_AGE_GRACE = Duration.ofSeconds(10);

  /**
   * grpc-java's server keepalive time, unless set: {@code
   * GrpcUtil.DEFAULT_SERVER_KEEPALIVE_TIME_NANOS}.
   */
  static final Duration GRPC_SERVER_KEEPALIVE_TIME = Duration.ofHours(2);

  /**
   * Whether every client connection is closed before gRPC's server keepalive would first ping it:
   * gRPC spreads the maximum age by up to 10 % (NettyServerBuilder's MAX_CONNECTION_AGE_JITTER),
   * then waits the grace.
   */
  static boolean endsBeforeKeepalive(Duration maxConnectionAge) {
    return maxConnectionAge.compareTo(GRPC_SERVER_KEEPALIVE_TIME) < 0
        && maxConnectionAge
                .multipliedBy(11)
                .dividedBy(10)
                .plus(CONNECTION_AGE_GRACE)
                .compareTo(GRPC_SERVER_KEEPALIVE_TIME)
            < 0;
  }

  /**
   * A server builder for the xDS port at {@code address} with {@code credentials}, on {@code
   * loops}, its limits and its connections' lifetime as {@code config} says; their meters in {@code
   * meters}.
   */
  static NettyServerBuilder builder(
      InetSocketAddress address,
      ServerCredentials credentials,
      ProxyConfig config,
      ServerEventLoops loops,
      MeterRegistry meters) {
    ConnectionCounts connections = new ConnectionCounts(config.transportLimits(), meters);
    StreamResetLimit resets = new StreamResetLimit(config.transportLimits(), meters);
    ServerCredentials announcing =
        config.xdsHpackTable() ? credentials : NoHpackTable.wrap(credentials);
    NettyServerBuilder builder =
        NettyServerBuilder.forAddress(address, resets.watch(announcing))
            // Every call's callbacks on its connection's event loop, as they come: an xDS stream
            // reads its requests there and hands them to its own executor, or handles an ACK there
            // and then (ClientStream.onNext); the other services hand theirs to the workers
            // (OnWorkers).
            .directExecutor()
            // xDS requests are small: a huge one is an attack or a bug (gRPC ends it with
            // RESOURCE_EXHAUSTED).
            .maxInboundMessageSize(config.limits().maxRequestBytes())
            .maxConcurrentCallsPerConnection(config.limits().maxStreamsPerConnection())
            // Envoy and gRPC clients ping to keep ADS streams alive through load balancers.
            .permitKeepAliveTime(10, TimeUnit.SECONDS)
            .permitKeepAliveWithoutCalls(true)
            // Clients move to other replicas in time (an added replica gets its share); gRPC
            // spreads the age by +-10 % so that connections made together do not all end together.
            .maxConnectionAge(config.maxConnectionAge().toMillis(), TimeUnit.MILLISECONDS)
            .maxConnectionAgeGrace(CONNECTION_AGE_GRACE.toSeconds(), TimeUnit.SECONDS);
    if (endsBeforeKeepalive(config.maxConnectionAge())) {
      // gRPC's server pings a silent client after two hours (its default keepalive time); a
      // connection that its maximum age ends sooner never pings, yet holds the keepalive's manager
      // and scheduled timer all its life (about 200 bytes of heap per connection).
      builder.keepAliveTime(Long.MAX_VALUE, TimeUnit.NANOSECONDS);
    }
    return resets.apply(loops.serve(builder, () -> new LimitedServerChannel(connections)));
  }
}
