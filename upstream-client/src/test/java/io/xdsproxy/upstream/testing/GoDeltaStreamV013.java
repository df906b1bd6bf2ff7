package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.grpc.Status;
import java.util.HashMap;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * One Delta ADS stream of go-control-plane v0.13.4's server: {@code processDelta} in
 * pkg/server/delta/v3/server.go at tag v0.13.4. As at HEAD, no nonce is checked, every request
 * replaces the type's watch and what the client has is recorded as a response is sent; the state is
 * {@link GoStreamStateV013}.
 */
final class GoDeltaStreamV013 implements GoStreamLink.Handler<DeltaDiscoveryRequest> {

  private static final class Watch {
    private final GoStreamStateV013 state;
    private Runnable cancel = () -> {};

    Watch(GoStreamStateV013 state) {
      this.state = state;
    }
  }

  private final GoSnapshotCacheV013 cache;
  private final GoStreamLink<DeltaDiscoveryResponse> link;
  private final Map<String, Watch> watches = new HashMap<>();
  private final Queue<GoResponses.Delta> muxed = new ConcurrentLinkedQueue<>();
  private Node node = Node.getDefaultInstance();
  private long nonce;
  private boolean closed;

  GoDeltaStreamV013(GoSnapshotCacheV013 cache, GoStreamLink<DeltaDiscoveryResponse> link) {
    this.cache = cache;
    this.link = link;
  }

  @Override
  public void onRequest(DeltaDiscoveryRequest received) {
    link.assertConfined();
    if (closed) {
      return;
    }
    processAll();
    DeltaDiscoveryRequest request = received;
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
    Watch watch = watches.get(typeUrl);
    if (watch == null) {
      watch =
          new Watch(
              new GoStreamStateV013(
                  request.getResourceNamesSubscribeCount() == 0,
                  request.getInitialResourceVersionsMap()));
      watches.put(typeUrl, watch);
    } else {
      watch.cancel.run();
    }
    watch.state.subscribe(request.getResourceNamesSubscribeList());
    watch.state.unsubscribe(request.getResourceNamesUnsubscribeList());
    watch.cancel =
        cache.createDeltaWatch(
            request,
            watch.state.view(),
            response -> {
              muxed.add(response);
              link.post(this::processAll);
            });
  }

  private void processAll() {
    GoResponses.Delta response;
    while (!closed && (response = muxed.poll()) != null) {
      link.send(response.toProto(Long.toString(++nonce)));
      Watch watch = watches.get(response.typeUrl());
      if (watch != null) {
        watch.state.setResourceVersions(response.returnedResources());
      }
    }
  }

  @Override
  public void close() {
    link.assertConfined();
    closed = true;
    watches.values().forEach(watch -> watch.cancel.run());
  }
}
