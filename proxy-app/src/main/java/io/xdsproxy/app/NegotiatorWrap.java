package io.xdsproxy.app;

import io.grpc.ServerCredentials;
import io.grpc.internal.ObjectPool;
import io.grpc.netty.GrpcHttp2ConnectionHandler;
import io.grpc.netty.InternalNettyServerCredentials;
import io.grpc.netty.InternalProtocolNegotiator;
import io.netty.channel.ChannelHandler;
import io.netty.util.AsciiString;
import java.util.concurrent.Executor;
import java.util.function.BiFunction;

/**
 * Server credentials whose protocol negotiator puts a handler of the proxy's in front of each
 * connection's negotiation (TLS or plaintext): where grpc-java (1.85) lets a server watch or add to
 * a connection's HTTP/2 handling that its builder does not configure ({@link NoHpackTable}, {@link
 * StreamResetLimit}).
 */
final class NegotiatorWrap {

  private NegotiatorWrap() {}

  /**
   * {@code credentials} whose every connection starts with the handler {@code inFront} makes of
   * gRPC's handler and the negotiation's; that handler gives its place to the negotiation.
   */
  static ServerCredentials wrap(
      ServerCredentials credentials,
      BiFunction<GrpcHttp2ConnectionHandler, ChannelHandler, ChannelHandler> inFront) {
    InternalProtocolNegotiator.ServerFactory factory =
        InternalNettyServerCredentials.toNegotiator(credentials);
    return InternalNettyServerCredentials.create(
        (InternalProtocolNegotiator.ServerFactory)
            (ObjectPool<? extends Executor> executors) ->
                negotiator(factory.newNegotiator(executors), inFront));
  }

  private static InternalProtocolNegotiator.ProtocolNegotiator negotiator(
      InternalProtocolNegotiator.ProtocolNegotiator delegate,
      BiFunction<GrpcHttp2ConnectionHandler, ChannelHandler, ChannelHandler> inFront) {
    return new InternalProtocolNegotiator.ProtocolNegotiator() {
      @Override
      public AsciiString scheme() {
        return delegate.scheme();
      }

      @Override
      public ChannelHandler newHandler(GrpcHttp2ConnectionHandler grpcHandler) {
        return inFront.apply(grpcHandler, delegate.newHandler(grpcHandler));
      }

      @Override
      public void close() {
        delegate.close();
      }
    };
  }
}
