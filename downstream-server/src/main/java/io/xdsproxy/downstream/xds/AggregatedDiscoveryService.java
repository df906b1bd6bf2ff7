package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc.AggregatedDiscoveryServiceImplBase;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.stub.StreamObserver;
import java.util.Optional;

/**
 * ADS: every type multiplexed on one stream, told apart by type URL ("Aggregated Discovery
 * Service"), in both the State-of-the-World and the incremental variant. Any well-formed type URL is
 * served, the known v3 types and opaque ones alike.
 */
public final class AggregatedDiscoveryService extends AggregatedDiscoveryServiceImplBase {

  private final Serving serving;

  public AggregatedDiscoveryService(Serving serving) {
    this.serving = serving;
  }

  @Override
  public StreamObserver<DiscoveryRequest> streamAggregatedResources(StreamObserver<DiscoveryResponse> responses) {
    return new SotwStream(responses, serving, Optional.empty(), PeerInterceptor.currentPeer());
  }

  @Override
  public StreamObserver<DeltaDiscoveryRequest> deltaAggregatedResources(StreamObserver<DeltaDiscoveryResponse> responses) {
    return new DeltaStream(responses, serving, Optional.empty(), PeerInterceptor.currentPeer());
  }
}
