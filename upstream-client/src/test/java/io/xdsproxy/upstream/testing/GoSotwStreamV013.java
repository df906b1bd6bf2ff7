package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Status;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * One SotW ADS stream of go-control-plane v0.13.4's server: {@code process} in
 * pkg/server/sotw/v3/xds.go and {@code streamWrapper.send} in server.go at tag v0.13.4 (unordered).
 * It has no subscription: what the cache learns of the stream is, per type, the names the client
 * was last answered for — the resource_names of the request that answer was for, recorded when a
 * request echoes that answer's nonce.
 */
final class GoSotwStreamV013 implements GoStreamLink.Handler<DiscoveryRequest> {

  private static final class Watch {
    private Runnable cancel = () -> {};
    private String nonce = "";
  }

  /**
   * {@code lastDiscoveryResponse}: a type's last answer's nonce and the names its request asked
   * for.
   */
  private record LastResponse(String nonce, Set<String> requestedNames) {}

  private final GoSnapshotCacheV013 cache;
  private final GoStreamLink<DiscoveryResponse> link;
  private final Map<String, Watch> watches = new HashMap<>();
  private final Map<String, LastResponse> lastResponses = new HashMap<>();

  /** {@code StreamState.knownResourceNames}, by type. */
  private final Map<String, Set<String>> knownResourceNames = new HashMap<>();

  private Node node = Node.getDefaultInstance();
  private long nonce;
  private boolean closed;

  GoSotwStreamV013(GoSnapshotCacheV013 cache, GoStreamLink<DiscoveryResponse> link) {
    this.cache = cache;
    this.link = link;
  }

  @Override
  public void onRequest(DiscoveryRequest received) {
    link.assertConfined();
    if (closed) {
      return;
    }
    DiscoveryRequest request = received;
    if (received.hasNode()) {
      node = received.getNode();
    } else {
      request = received.toBuilder().setNode(node).build();
    }
    String typeUrl = request.getTypeUrl();
    if (typeUrl.isEmpty()) {
      close();
      link.fail(Status.INVALID_ARGUMENT.withDescription("type URL is required for ADS"));
      return;
    }
    String requestNonce = request.getResponseNonce();
    // Recorded before the watch's nonce is checked: a request echoing the type's last answer makes
    // that answer's names known.
    LastResponse last = lastResponses.get(typeUrl);
    if (last != null && (last.nonce().isEmpty() || last.nonce().equals(requestNonce))) {
      knownResourceNames.put(typeUrl, last.requestedNames());
    }
    Watch current = watches.get(typeUrl);
    if (current != null) {
      if (!current.nonce.isEmpty() && !current.nonce.equals(requestNonce)) {
        return;
      }
      current.cancel.run();
    }
    Watch next = new Watch();
    watches.put(typeUrl, next);
    next.cancel =
        cache.createWatch(
            request,
            knownResourceNames.getOrDefault(typeUrl, Set.of()),
            response -> link.post(() -> send(next, response)));
  }

  /**
   * {@code streamWrapper.send}; an answer of a replaced watch is never read (see {@link
   * GoSotwStream}).
   */
  private void send(Watch from, GoResponses.Sotw response) {
    if (closed || watches.get(response.typeUrl()) != from) {
      return;
    }
    String sent = Long.toString(++nonce);
    lastResponses.put(
        response.typeUrl(),
        new LastResponse(sent, Set.copyOf(response.request().getResourceNamesList())));
    from.nonce = sent;
    link.send(response.toProto(sent));
  }

  @Override
  public void close() {
    link.assertConfined();
    closed = true;
    watches.values().forEach(watch -> watch.cancel.run());
  }
}
