package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.grpc.Status;
import io.grpc.StatusException;
import java.util.HashMap;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * One Delta ADS stream of go-control-plane HEAD's server: {@code processDelta} in
 * pkg/server/delta/v3/server.go, legacy wildcard active. Nonces are counted but never checked:
 * every request replaces the type's watch. What the client was returned is updated when a response
 * is sent, not when it is ACKed, so a NACKed resource is not sent again until it changes.
 */
final class GoDeltaStream implements GoStreamLink.Handler<DeltaDiscoveryRequest> {

  /** One type's watch ({@code watch}, pkg/server/delta/v3/watches.go). */
  private static final class Watch {
    private final GoSubscription subscription;
    private Runnable cancel = () -> {};

    Watch(GoSubscription subscription) {
      this.subscription = subscription;
    }
  }

  private final GoCache cache;
  private final GoStreamLink<DeltaDiscoveryResponse> link;
  private final Map<String, Watch> watches = new HashMap<>();

  /** {@code deltaMuxedResponses}: one channel for every type's answers, read in order. */
  private final Queue<GoResponses.Delta> muxed = new ConcurrentLinkedQueue<>();

  private Node node = Node.getDefaultInstance();
  private long nonce;
  private boolean closed;

  GoDeltaStream(GoCache cache, GoStreamLink<DeltaDiscoveryResponse> link) {
    this.cache = cache;
    this.link = link;
  }

  @Override
  public void onRequest(DeltaDiscoveryRequest received) {
    link.assertConfined();
    if (closed) {
      return;
    }
    // "make sure all existing responses are processed prior to new requests to avoid deadlock"
    processAll();
    DeltaDiscoveryRequest request = received;
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
    Watch watch = watches.get(typeUrl);
    if (watch == null) {
      // The first request of the type: its initial_resource_versions are what the client already
      // has.
      watch =
          new Watch(
              GoSubscription.delta(
                  request.getResourceNamesSubscribeList(),
                  request.getResourceNamesUnsubscribeList(),
                  request.getInitialResourceVersionsMap(),
                  true));
      watches.put(typeUrl, watch);
    } else {
      watch.cancel.run();
      watch.subscription.updateResourceSubscriptions(
          request.getResourceNamesSubscribeList(), request.getResourceNamesUnsubscribeList());
    }
    try {
      watch.cancel =
          cache.createDeltaWatch(
              request,
              watch.subscription.view(),
              response -> {
                muxed.add(response);
                link.post(this::processAll);
              });
    } catch (StatusException e) {
      end(e.getStatus());
    }
  }

  /** {@code processAll}: sends every queued answer, whichever watch it came from. */
  private void processAll() {
    GoResponses.Delta response;
    while (!closed && (response = muxed.poll()) != null) {
      process(response);
    }
  }

  /**
   * {@code process}: send, then record what the client now has in the type's current subscription.
   */
  private void process(GoResponses.Delta response) {
    link.send(response.toProto(Long.toString(++nonce)));
    Watch watch = watches.get(response.typeUrl());
    if (watch != null) {
      watch.subscription.setReturnedResources(response.returnedResources());
    }
  }

  private void end(Status status) {
    close();
    link.fail(status);
  }

  @Override
  public void close() {
    link.assertConfined();
    closed = true;
    watches.values().forEach(watch -> watch.cancel.run());
  }
}
