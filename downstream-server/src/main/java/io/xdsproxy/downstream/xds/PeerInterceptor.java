package io.xdsproxy.downstream.xds;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.xdsproxy.core.VerifiedIdentity;
import java.net.SocketAddress;

/**
 * Puts the client's address and what its connection proved ({@link ClientIdentities}) into the gRPC
 * context, so that a stream names its peer in logs and decides what it may serve from its verified
 * identity.
 */
public final class PeerInterceptor implements ServerInterceptor {

  private static final Context.Key<SocketAddress> PEER = Context.key("xds-proxy-peer");
  private static final Context.Key<VerifiedIdentity> IDENTITY =
      Context.key("xds-proxy-verified-identity");

  /** Stands for the address of a call that has none (in-process). */
  private static final SocketAddress UNKNOWN =
      new SocketAddress() {
        @Override
        public String toString() {
          return "unknown peer";
        }
      };

  /**
   * The address of the client whose call is being started on this thread: the transport's own
   * object, shared by the connection's streams and made a string only when a line is written.
   */
  static SocketAddress currentPeer() {
    SocketAddress address = PEER.get();
    return address == null ? UNKNOWN : address;
  }

  /**
   * What the connection of the call being started on this thread proved, read from its TLS session
   * when the call started; {@link VerifiedIdentity#ANONYMOUS} for a call that has none
   * (in-process).
   */
  static VerifiedIdentity currentIdentity() {
    VerifiedIdentity identity = IDENTITY.get();
    return identity == null ? VerifiedIdentity.ANONYMOUS : identity;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    SocketAddress address = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    VerifiedIdentity identity =
        ClientIdentities.of(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION), address);
    // The call keeps its context for as long as it lives: one context holding both.
    Context context = Context.current().withValues(PEER, address, IDENTITY, identity);
    return Contexts.interceptCall(context, call, headers, next);
  }
}
