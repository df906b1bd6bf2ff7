package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Status;
import io.grpc.StatusException;
import java.util.HashMap;
import java.util.Map;

/**
 * One SotW ADS stream of go-control-plane HEAD's server: {@code process} in
 * pkg/server/sotw/v3/xds.go (the default, unordered loop: no {@code WithOrderedADS}), {@code
 * streamWrapper.send} in server.go, with legacy wildcard active for every type (no {@code
 * DeactivateLegacyWildcard}). There is no ACK or NACK in it: every request it accepts replaces the
 * type's watch and asks the cache, which decides from the version, the names and what this stream
 * was already returned.
 */
final class GoSotwStream implements GoStreamLink.Handler<DiscoveryRequest> {

  /** One type's watch ({@code watch}, pkg/server/sotw/v3/watches.go). */
  private static final class Watch {
    private final GoSubscription subscription;
    private Runnable cancel = () -> {};

    /**
     * The nonce of the response this watch sent; "" until it sends one, so a new watch accepts any
     * nonce.
     */
    private String nonce = "";

    Watch(GoSubscription subscription) {
      this.subscription = subscription;
    }
  }

  private final GoCache cache;
  private final GoStreamLink<DiscoveryResponse> link;
  private final Map<String, Watch> watches = new HashMap<>();
  private Node node = Node.getDefaultInstance();

  /** One counter for every type: {@code streamWrapper.nonce}. */
  private long nonce;

  private boolean closed;

  GoSotwStream(GoCache cache, GoStreamLink<DiscoveryResponse> link) {
    this.cache = cache;
    this.link = link;
  }

  @Override
  public void onRequest(DiscoveryRequest received) {
    link.assertConfined();
    if (closed) {
      return;
    }
    // "Only first request is guaranteed to hold node info so if it's missing, reassign."
    DiscoveryRequest request = received;
    if (received.hasNode()) {
      node = received.getNode();
    } else {
      request = received.toBuilder().setNode(node).build();
    }
    String typeUrl = request.getTypeUrl();
    if (typeUrl.isEmpty()) {
      end(Status.INVALID_ARGUMENT.withDescription("type URL is required for ADS"));
      return;
    }
    Watch current = watches.get(typeUrl);
    GoSubscription subscription;
    if (current != null) {
      // The watch's nonce, not the type's last one: a watch replaced by an accepted request has
      // none until it sends, and until then any nonce, empty included, is accepted.
      if (!current.nonce.isEmpty() && !request.getResponseNonce().equals(current.nonce)) {
        return;
      }
      current.cancel.run();
      subscription = current.subscription;
      subscription.setResourceSubscription(request.getResourceNamesList());
    } else {
      subscription = GoSubscription.sotw(request.getResourceNamesList(), true);
    }
    Watch next = new Watch(subscription);
    watches.put(typeUrl, next);
    try {
      next.cancel =
          cache.createWatch(
              request, subscription.view(), response -> link.post(() -> send(next, response)));
    } catch (StatusException e) {
      end(e.getStatus());
    }
  }

  /**
   * {@code streamWrapper.send}. A response of a watch that a later request replaced is dropped:
   * go's loop stops selecting on the replaced watch's channel ({@code watches.recompute}), so what
   * was queued there is never read.
   */
  private void send(Watch from, GoResponses.Sotw response) {
    if (closed || watches.get(response.typeUrl()) != from) {
      return;
    }
    if (!matchesCurrentSubscription(response, from.subscription.view())) {
      return;
    }
    String sent = Long.toString(++nonce);
    from.subscription.setReturnedResources(response.returnedResources());
    from.nonce = sent;
    link.send(response.toProto(sent));
  }

  /**
   * {@code responseMatchesCurrentSubscription} (server.go, go-control-plane#1498): a response
   * naming a resource the client no longer subscribes to is dropped. With the caches modelled here
   * a response is always computed for its watch's subscription, so this only guards, as it does in
   * go's unordered loop.
   */
  private static boolean matchesCurrentSubscription(
      GoResponses.Sotw response, GoSubscription.View subscription) {
    if (subscription.wildcard()) {
      return true;
    }
    return response.returnedResources().keySet().stream().allMatch(subscription::isSubscribedTo);
  }

  private void end(Status status) {
    close();
    link.fail(status);
  }

  /** {@code streamWrapper.shutdown}: every watch is cancelled. */
  @Override
  public void close() {
    link.assertConfined();
    closed = true;
    watches.values().forEach(watch -> watch.cancel.run());
  }
}
