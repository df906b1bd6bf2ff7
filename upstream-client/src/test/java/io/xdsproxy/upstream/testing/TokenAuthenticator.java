package io.xdsproxy.upstream.testing;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A control plane's check of its clients' bearer tokens, as istiod's secure port makes it ({@code
 * DiscoveryServer.authenticate}, pilot/pkg/xds/authentication.go): a call without the token
 * expected now is closed with {@code UNAUTHENTICATED} "authentication failure" before the service
 * sees it. Records the {@code authorization} header of every call, as sent.
 */
public final class TokenAuthenticator implements ServerInterceptor {

  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  private final List<String> seen = new CopyOnWriteArrayList<>();
  private volatile String expected;

  public TokenAuthenticator(String expected) {
    this.expected = expected;
  }

  /** From now on, calls must carry {@code token}: the control plane trusts a rotated one. */
  public void expect(String token) {
    expected = token;
  }

  /** The {@code authorization} header of every call so far, in order; "" for a call without. */
  public List<String> seen() {
    return List.copyOf(seen);
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    String authorization = headers.get(AUTHORIZATION);
    seen.add(authorization == null ? "" : authorization);
    if (!("Bearer " + expected).equals(authorization)) {
      call.close(Status.UNAUTHENTICATED.withDescription("authentication failure"), new Metadata());
      return new ServerCall.Listener<>() {};
    }
    return next.startCall(call, headers);
  }
}
