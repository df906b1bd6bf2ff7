package io.xdsproxy.downstream.xds;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.net.SocketAddress;

/** Puts the client's address into the gRPC context, so streams can name their peer in logs. */
public final class PeerInterceptor implements ServerInterceptor {

  private static final Context.Key<SocketAddress> PEER = Context.key("xds-proxy-peer");

  /** The address of the client whose call is being started on this thread. */
  static String currentPeer() {
    SocketAddress address = PEER.get();
    return address == null ? "unknown peer" : address.toString();
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    SocketAddress address = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    return Contexts.interceptCall(Context.current().withValue(PEER, address), call, headers, next);
  }
}
