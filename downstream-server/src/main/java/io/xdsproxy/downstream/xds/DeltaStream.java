package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.TypeUrl;
import java.net.SocketAddress;
import java.util.Optional;

/**
 * One downstream incremental (Delta) stream: ADS or a per-type service. Each type is a {@link
 * DeltaTypeState}. Responses are written from their encoded body ({@link EncodedResponse}).
 */
public final class DeltaStream extends ClientStream<DeltaDiscoveryRequest, DeltaTypeState> {

  /** The variant's name in logs; lower-cased, its {@code protocol} label in metrics. */
  static final String PROTOCOL = "Delta";

  /**
   * @param fixedType the type of a per-type service, empty for ADS
   * @param peer the client's address, for logs
   */
  public DeltaStream(
      StreamObserver<EncodedResponse> responses,
      ServerContext serving,
      Optional<TypeUrl> fixedType,
      SocketAddress peer) {
    super(PROTOCOL, responses, serving, fixedType, peer);
  }

  @Override
  void handle(DeltaDiscoveryRequest request) {
    Optional<TypeUrl> parsed =
        typeOf(request, request.hasNode(), request.getNode(), request.getTypeUrl());
    if (parsed.isEmpty()) {
      return;
    }
    TypeUrl type = parsed.get();
    DeltaTypeState state =
        typeStream(type, t -> new DeltaTypeState(t, group().snapshot(t), knowsTtl(false), clock()));
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
        && !namesWithinLimits(
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
      if (!subscriptionWithinLimits(type, state.subscription().names().size())) {
        return;
      }
      group().subscribe(this, type, state.subscription().interest());
    }
    if (subscribed.refetch()) {
      group().refetch(type);
    }
    state.update(group().snapshot(type));
    send(type);
  }
}
