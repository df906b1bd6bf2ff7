package io.xdsproxy.upstream.grpc;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Channel;
import io.grpc.stub.ClientResponseObserver;

/**
 * How a stream of one ADS variant is started on a channel: the one place the upstream side names
 * the variants' gRPC methods, for group sessions and audits alike.
 *
 * @param <Q> the request message
 * @param <R> the response message
 */
@FunctionalInterface
interface AdsCall<Q, R> {

  AdsCall<DiscoveryRequest, DiscoveryResponse> SOTW =
      (channel, observer) ->
          AggregatedDiscoveryServiceGrpc.newStub(channel).streamAggregatedResources(observer);

  AdsCall<DeltaDiscoveryRequest, DeltaDiscoveryResponse> DELTA =
      (channel, observer) ->
          AggregatedDiscoveryServiceGrpc.newStub(channel).deltaAggregatedResources(observer);

  /** Starts the call; {@code observer} is given its request stream before it starts. */
  void start(Channel channel, ClientResponseObserver<Q, R> observer);
}
