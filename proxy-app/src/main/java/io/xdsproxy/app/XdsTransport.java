package io.xdsproxy.app;

import io.grpc.ServerCredentials;
import io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetSocketAddress;

/**
 * The xDS port's transport, below gRPC's calls: its event loops, its credentials (TLS or plaintext,
 * and the HPACK table it asks clients for), and the {@link TransportLimits} that bound what one
 * peer costs it before a stream is read: connections in all and per address ({@link
 * ConnectionCounts}, refused at accept by {@link LimitedServerChannel}), and stream resets per
 * connection ({@link StreamResetLimit}).
 */
final class XdsTransport {
  private XdsTransport() {}

  /**
   * A server builder for the xDS port at {@code address} with {@code credentials}, on {@code
   * loops}, its limits as {@code config} says; their meters in {@code meters}.
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
    NettyServerBuilder builder = NettyServerBuilder.forAddress(address, resets.watch(announcing));
    return resets.apply(loops.serve(builder, () -> new LimitedServerChannel(connections)));
  }
}
