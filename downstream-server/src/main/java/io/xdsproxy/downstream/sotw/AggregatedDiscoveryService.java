package io.xdsproxy.downstream.sotw;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc.AggregatedDiscoveryServiceImplBase;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.NodeGroups;
import java.util.Optional;
import java.util.concurrent.Executor;

/** ADS: every type multiplexed on one stream, told apart by type URL ("Aggregated Discovery Service"). */
public final class AggregatedDiscoveryService extends AggregatedDiscoveryServiceImplBase {

  private final NodeGroups groups;
  private final Executor pool;

  public AggregatedDiscoveryService(NodeGroups groups, Executor pool) {
    this.groups = groups;
    this.pool = pool;
  }

  @Override
  public StreamObserver<DiscoveryRequest> streamAggregatedResources(StreamObserver<DiscoveryResponse> responses) {
    return new SotwStream(responses, groups, Optional.empty(), pool, PeerInterceptor.currentPeer());
  }

  @Override
  public StreamObserver<DeltaDiscoveryRequest> deltaAggregatedResources(StreamObserver<DeltaDiscoveryResponse> responses) {
    responses.onError(Status.UNIMPLEMENTED
        .withDescription("Incremental ADS is not served yet; use StreamAggregatedResources (SotW)")
        .asRuntimeException());
    return new StreamObserver<>() {
      @Override
      public void onNext(DeltaDiscoveryRequest request) {}

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onCompleted() {}
    };
  }
}
