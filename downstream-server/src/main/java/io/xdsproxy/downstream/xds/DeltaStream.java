package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.ClientFeatures;
import io.xdsproxy.core.TypeUrl;
import java.util.Optional;

/**
 * One downstream incremental (Delta) stream: ADS or a per-type service. Each type is a {@link
 * DeltaTypeState}. Responses are written from their encoded body ({@link EncodedResponse}).
 */
public final class DeltaStream extends ClientStream<DeltaDiscoveryRequest, DeltaTypeState> {

  private static final StreamRequests<DeltaDiscoveryRequest> REQUESTS =
      new StreamRequests<>(
          DELTA,
          RequestMarshaller.DELTA,
          DeltaDiscoveryRequest::hasNode,
          DeltaDiscoveryRequest::getNode,
          DeltaDiscoveryRequest::getTypeUrl,
          request ->
              request.getResourceNamesSubscribeCount()
                  + request.getResourceNamesUnsubscribeCount()
                  + request.getInitialResourceVersionsCount());

  /**
   * @param fixedType the type of a per-type service, empty for ADS
   */
  public DeltaStream(
      StreamObserver<EncodedResponse> out, ServerContext serving, Optional<TypeUrl> fixedType) {
    super(REQUESTS, out, serving, fixedType);
  }

  @Override
  void handle(DeltaDiscoveryRequest request, TypeUrl type, DeltaTypeState state) {
    // The nonce pairs an ACK or NACK with a response, but "the server must honor changes to the
    // subscription state even if the nonce is stale" ("Incremental xDS").
    boolean latest = state.isLatest(request.getResponseNonce());
    counted(type, Reply.of(latest, request.getResponseNonce(), request.hasErrorDetail()));
    if (latest && !request.hasErrorDetail()) {
      state.ack();
    } else if (latest) {
      nacked(state, request.getResponseNonce(), request.getErrorDetail());
    }
    int names =
        request.getResourceNamesSubscribeCount()
            + request.getResourceNamesUnsubscribeCount()
            + request.getInitialResourceVersionsCount();
    if (names > 0
        && !member()
            .namesWithinLimits(
                type,
                names,
                request.getResourceNamesSubscribeList(),
                request.getResourceNamesUnsubscribeList(),
                request.getInitialResourceVersionsMap().keySet())) {
      return;
    }
    DeltaTypeState.Subscribed subscribed =
        state.subscribe(
            request.getResourceNamesSubscribeList(),
            request.getResourceNamesUnsubscribeList(),
            request.getInitialResourceVersionsMap());
    if (subscribed.changed()) {
      if (!member().subscriptionWithinLimits(type, state.subscription().names().size())) {
        return;
      }
      group().subscribe(this, type, state.subscription().interest());
    }
    if (subscribed.refetch()) {
      group().refetch(type);
    }
    send(type);
  }

  @Override
  DeltaTypeState newTypeState(TypeUrl type) {
    return new DeltaTypeState(
        type, group().snapshot(type), ClientFeatures.knowsTtl(node(), false), clock());
  }
}
