package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.StatusException;
import java.util.function.Consumer;

/**
 * go-control-plane HEAD's {@code cache.ConfigWatcher} (pkg/cache/v3/cache.go), what its SotW and
 * Delta servers ask: a watch answers at most once, by handing a response to {@code responder} (go:
 * a send on the watch's channel), either at once or when the cache changes; the returned cancel
 * removes it. The request carries the stream's node. An error ends the stream, as the go server
 * returns it from the stream handler (grpc-go then sends UNKNOWN).
 */
interface GoCache {

  Runnable createWatch(
      DiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Sotw> responder)
      throws StatusException;

  Runnable createDeltaWatch(
      DeltaDiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Delta> responder)
      throws StatusException;
}
