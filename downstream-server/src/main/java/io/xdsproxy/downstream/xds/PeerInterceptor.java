package io.xdsproxy.downstream.xds;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.net.SocketAddress;
import java.util.Optional;

/**
 * Puts the client's address into the gRPC context, so streams can name their peer in logs, and,
 * with a {@link NodeIdPattern}, the check of which node ids the client's TLS certificate allows.
 */
public final class PeerInterceptor implements ServerInterceptor {

  private static final Context.Key<SocketAddress> PEER = Context.key("xds-proxy-peer");
  private static final Context.Key<NodeIdCheck> NODE_ID_CHECK =
      Context.key("xds-proxy-node-id-check");

  private final Optional<NodeIdPattern> nodeIdPattern;

  public PeerInterceptor() {
    this(Optional.empty());
  }

  public PeerInterceptor(Optional<NodeIdPattern> nodeIdPattern) {
    this.nodeIdPattern = nodeIdPattern;
  }

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

  /** The node ids the client whose call is being started on this thread may claim. */
  static NodeIdCheck currentNodeIdCheck() {
    NodeIdCheck check = NODE_ID_CHECK.get();
    return check == null ? NodeIdCheck.ANY : check;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    SocketAddress address = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    NodeIdCheck check =
        nodeIdPattern
            .map(
                pattern ->
                    pattern.forSession(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION)))
            .orElse(NodeIdCheck.ANY);
    // The call keeps its context for as long as it lives: one context, and the check only if there
    // is one.
    Context context =
        check == NodeIdCheck.ANY
            ? Context.current().withValue(PEER, address)
            : Context.current().withValues(PEER, address, NODE_ID_CHECK, check);
    return Contexts.interceptCall(context, call, headers, next);
  }
}
