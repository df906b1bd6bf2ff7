package io.xdsproxy.app;

import io.grpc.ServerCredentials;
import io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerAdapter;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2Error;
import io.xdsproxy.core.LimitedLog;
import io.xdsproxy.core.LogFields;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * The xDS port's guard against HTTP/2 rapid reset (CVE-2023-44487): a client that opens streams and
 * resets them at once makes the server set up and tear down a call for each, at no cost to itself,
 * and no stream limit stops it, since none of them stays open. gRPC counts a connection's
 * RST_STREAM frames ({@link NettyServerBuilder#maxRstFramesPerWindow}); past {@code
 * --max-stream-resets-per-connection} in {@link TransportLimits#RESET_WINDOW} it sends GOAWAY
 * {@code ENHANCE_YOUR_CALM} and closes the connection (NettyServerHandler.onRstStreamRead). The
 * streams the server itself resets for a client's errors count too.
 *
 * <p>gRPC says nothing of it above its debug log, so the port's credentials are wrapped (as {@link
 * NoHpackTable} does) to watch each connection's GOAWAY: one gRPC sends for too many resets is
 * counted in {@code xds_connections_closed_total{limit="stream_resets"}} and logged, a few lines a
 * second at most.
 */
final class StreamResetLimit {

  private static final Logger log = LoggerFactory.getLogger(StreamResetLimit.class);

  private static final LimitedLog closings =
      LimitedLog.of(log, Level.WARN, 3, Duration.ofSeconds(1));

  /** The debug data of gRPC's GOAWAY for too many resets (NettyServerHandler.RstStreamCounter). */
  private static final String TOO_MANY_RESETS = "too_many_rststreams";

  private final int maxResets;
  private final Counter closed;

  StreamResetLimit(TransportLimits limits, MeterRegistry meters) {
    maxResets = limits.maxStreamResetsPerConnection();
    closed =
        Counter.builder("xds.connections.closed")
            .description(
                "Connections to the xDS port closed for going past a limit: stream_resets, more"
                    + " RST_STREAM frames than --max-stream-resets-per-connection allows (HTTP/2"
                    + " rapid reset)")
            .tag("limit", "stream_resets")
            .register(meters);
  }

  /** {@code builder} with the limit on, unless it is 0. */
  NettyServerBuilder apply(NettyServerBuilder builder) {
    return maxResets == 0
        ? builder
        : builder.maxRstFramesPerWindow(maxResets, (int) TransportLimits.RESET_WINDOW.toSeconds());
  }

  /** {@code credentials} whose connections' GOAWAYs for too many resets are counted and logged. */
  ServerCredentials watch(ServerCredentials credentials) {
    if (maxResets == 0) {
      return credentials;
    }
    return NegotiatorWrap.wrap(credentials, Watcher::new);
  }

  /**
   * What watches one connection's GOAWAYs, for as long as the connection lives: it holds the peer's
   * address and nothing of the negotiation, which is done with once the connection is ready (a
   * listener made in the {@link Watcher} would hold the watcher and, through it, every handler and
   * event of the negotiation: about 600 bytes a connection).
   */
  private Http2ConnectionAdapter goAwayWatch(SocketAddress peer) {
    return new Http2ConnectionAdapter() {
      @Override
      public void onGoAwaySent(int lastStreamId, long errorCode, ByteBuf debugData) {
        if (errorCode == Http2Error.ENHANCE_YOUR_CALM.code()
            && TOO_MANY_RESETS.equals(debugData.toString(StandardCharsets.US_ASCII))) {
          closed(peer);
        }
      }
    };
  }

  /**
   * Registers the watch on the connection's HTTP/2 state once it is in a pipeline, where the peer's
   * address is known, and gives its place to the negotiation (TLS or plaintext). On the
   * connection's event loop.
   */
  private final class Watcher extends ChannelHandlerAdapter {
    private final GrpcHttp2ConnectionHandler grpcHandler;
    private final ChannelHandler negotiation;

    Watcher(GrpcHttp2ConnectionHandler grpcHandler, ChannelHandler negotiation) {
      this.grpcHandler = grpcHandler;
      this.negotiation = negotiation;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      grpcHandler.connection().addListener(goAwayWatch(ctx.channel().remoteAddress()));
      ctx.pipeline().replace(this, null, negotiation);
    }
  }

  private void closed(SocketAddress peer) {
    closed.increment();
    String address =
        peer instanceof InetSocketAddress socket
            ? socket.getAddress().getHostAddress()
            : String.valueOf(peer);
    closings.log(
        LogFields.NONE.peer(peer),
        "closed a connection to the xDS port from {} with GOAWAY ENHANCE_YOUR_CALM: it reset more"
            + " than {} streams in {} s (HTTP/2 rapid reset; --max-stream-resets-per-connection)",
        address,
        maxResets,
        TransportLimits.RESET_WINDOW.toSeconds());
  }
}
