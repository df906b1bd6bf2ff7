package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ServerCalls;
import java.util.Optional;

/**
 * ADS: every type multiplexed on one stream, told apart by type URL ("Aggregated Discovery
 * Service"), in both the State-of-the-World and the incremental variant. Any well-formed type URL is
 * served, the known v3 types and opaque ones alike.
 */
public final class AggregatedDiscoveryService {

  private AggregatedDiscoveryService() {}

  /** The service to add to the xDS server, its SotW method as {@link #sotw} makes it. */
  public static ServerServiceDefinition definition(Serving serving) {
    return ServerServiceDefinition.builder(AggregatedDiscoveryServiceGrpc.SERVICE_NAME)
        .addMethod(sotw(AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod()),
            ServerCalls.asyncBidiStreamingCall(
                responses -> new SotwStream(responses, serving, Optional.empty(), PeerInterceptor.currentPeer())))
        .addMethod(delta(AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod()),
            ServerCalls.asyncBidiStreamingCall(
                responses -> new DeltaStream(responses, serving, Optional.empty(), PeerInterceptor.currentPeer())))
        .build();
  }

  /**
   * {@code method} with its requests read by {@link SotwRequestMarshaller} and its responses written
   * from their shared, pre-encoded resources ({@link EncodedResponse}).
   */
  static MethodDescriptor<DiscoveryRequest, EncodedResponse> sotw(MethodDescriptor<DiscoveryRequest, DiscoveryResponse> method) {
    return method.toBuilder(MARSHALLER, EncodedResponse.SOTW).build();
  }

  /** {@code method} with its responses written from their shared, pre-encoded body ({@link EncodedResponse}). */
  static MethodDescriptor<DeltaDiscoveryRequest, EncodedResponse> delta(
      MethodDescriptor<DeltaDiscoveryRequest, DeltaDiscoveryResponse> method) {
    return method.toBuilder(method.getRequestMarshaller(), EncodedResponse.DELTA).build();
  }

  private static final SotwRequestMarshaller MARSHALLER = new SotwRequestMarshaller();
}
