package io.xdsproxy.app;

import io.grpc.ServerCredentials;
import io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.Http2Settings;

/**
 * Server credentials whose connections keep no HPACK decoder table: the xDS port announces
 * SETTINGS_HEADER_TABLE_SIZE 0 (RFC 7541 section 4.2, RFC 9113 section 6.5.2), so that clients
 * index none of their request headers.
 *
 * <p>Why: an xDS client opens a stream or two per connection and keeps it for the connection's
 * life, so the table never saves a byte after the first request, yet every connection holds the
 * decoder's 4 KiB table array and the request headers indexed in it: about 1 KiB of heap per
 * connection, an eighth of what an idle client connection costs (bench/RESULTS.md, "Heap per
 * stream, round two"). A request's headers then cost some tens of bytes more on the wire, once per
 * stream.
 *
 * <p>grpc-java (1.85) has no builder option for it and sends its SETTINGS from a handler that
 * cannot be configured, so this wraps the credentials' protocol negotiator: once gRPC's handler is
 * in the pipeline and has sent its preface, a second SETTINGS frame follows from it. Netty applies
 * the smaller table to the decoder only when the client acknowledges that frame, and then requires
 * the client's next header block to begin with the table size update, as the RFC does (Envoy,
 * grpc-go and grpc-java's Netty transport send it; grpc-java's OkHttp transport before the fix of
 * grpc/grpc-java#12819 does not).
 */
public final class NoHpackTable {
  private NoHpackTable() {}

  /** {@code credentials} with the xDS port's connections' HPACK tables set to nothing. */
  public static ServerCredentials wrap(ServerCredentials credentials) {
    return NegotiatorWrap.wrap(credentials, Announcer::new);
  }

  /**
   * Sits in front of the negotiation (TLS or plaintext), watches every event until gRPC's handler
   * has replaced the negotiation's last handler, then sends the second SETTINGS through it (so that
   * TLS encrypts it) and leaves the pipeline. On the connection's event loop.
   */
  private static final class Announcer extends ChannelDuplexHandler {
    private final GrpcHttp2ConnectionHandler grpcHandler;
    private final ChannelHandler negotiation;

    Announcer(GrpcHttp2ConnectionHandler grpcHandler, ChannelHandler negotiation) {
      this.grpcHandler = grpcHandler;
      this.negotiation = negotiation;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      ctx.pipeline().addAfter(ctx.name(), null, negotiation);
      // The encoder's own table (the response headers, about 200 bytes) is left as the client
      // allows: shrinking it makes Netty allocate, and keep, a 256-byte buffer for the size update.
      announceIfReady(ctx);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
      ctx.fireChannelActive();
      announceIfReady(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object message) {
      ctx.fireChannelRead(message);
      announceIfReady(ctx);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
      ctx.fireUserEventTriggered(event);
      announceIfReady(ctx);
    }

    private void announceIfReady(ChannelHandlerContext ctx) {
      if (ctx.isRemoved()) {
        return;
      }
      ChannelHandlerContext grpc = ctx.pipeline().context(grpcHandler);
      if (grpc == null || !ctx.channel().isActive()) {
        return;
      }
      ctx.pipeline().remove(this);
      grpcHandler
          .encoder()
          .writeSettings(grpc, new Http2Settings().headerTableSize(0), grpc.newPromise());
      grpc.flush();
    }
  }
}
