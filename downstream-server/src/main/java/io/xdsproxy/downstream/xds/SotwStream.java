package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.ClientFeatures;
import io.xdsproxy.core.TypeUrl;
import java.util.Optional;

/**
 * One downstream State-of-the-World stream: ADS (every type multiplexed by type URL) or a per-type
 * service (one fixed type). Each type is a {@link SotwTypeState}.
 */
public final class SotwStream extends ClientStream<DiscoveryRequest, SotwTypeState> {

  private static final StreamRequests<DiscoveryRequest> REQUESTS =
      new StreamRequests<>(
          SOTW,
          RequestMarshaller.SOTW,
          DiscoveryRequest::hasNode,
          DiscoveryRequest::getNode,
          DiscoveryRequest::getTypeUrl,
          DiscoveryRequest::getResourceNamesCount);

  /**
   * @param fixedType the type of a per-type service, empty for ADS
   */
  public SotwStream(
      StreamObserver<EncodedResponse> out, ServerContext serving, Optional<TypeUrl> fixedType) {
    super(REQUESTS, out, serving, fixedType);
  }

  @Override
  SotwTypeState newTypeState(TypeUrl type) {
    return new SotwTypeState(
        type, group().snapshot(type), ClientFeatures.knowsTtl(node(), true), clock());
  }

  @Override
  void handle(DiscoveryRequest request, TypeUrl type, SotwTypeState state) {
    boolean current = state.isCurrent(request.getResponseNonce());
    counted(type, Reply.of(current, request.getResponseNonce(), request.hasErrorDetail()));
    if (!current) {
      // "Requests become stale": the client will ask again when it has seen the newer response.
      stale(type, request.getResponseNonce());
      return;
    }
    if (request.hasErrorDetail()) {
      nacked(state, request.getResponseNonce(), request.getErrorDetail());
    } else if (state.asksAgain(request.getResourceNamesList(), request.getVersionInfo())) {
      if (state.askedAgain()) {
        group().refetch(type);
      }
    } else if (!request.getResponseNonce().isEmpty()) {
      state.ack(request.getVersionInfo());
    }
    if (!state.repeats(request.getResourceNamesList())
        && !member()
            .namesWithinLimits(
                type, request.getResourceNamesCount(), request.getResourceNamesList())) {
      return;
    }
    if (state.subscribe(request.getResourceNamesList())) {
      group().subscribe(this, type, state.subscription().interest());
    }
    send(type);
  }
}
