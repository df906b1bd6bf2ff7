package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.stub.ServerCalls;
import java.util.Optional;

/**
 * ADS: every type multiplexed on one stream, told apart by type URL ("Aggregated Discovery
 * Service"), in both the State-of-the-World and the incremental variant. Any well-formed type URL
 * is served, the known v3 types and opaque ones alike.
 */
public final class AggregatedDiscoveryService {

  private AggregatedDiscoveryService() {}

  /** The service to add to the xDS server, its SotW method as {@link #sotw} makes it. */
  public static ServerServiceDefinition definition(ServerContext serving) {
    MethodDescriptor<DiscoveryRequest, EncodedResponse> sotw =
        sotw(AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod());
    MethodDescriptor<DeltaDiscoveryRequest, EncodedResponse> delta =
        delta(AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod());
    serving.metrics().serves(ClientStream.SOTW, "ads");
    serving.metrics().serves(ClientStream.DELTA, "ads");
    return ServerServiceDefinition.builder(
            describedAs(AggregatedDiscoveryServiceGrpc.getServiceDescriptor())
                .addMethod(sotw)
                .addMethod(delta)
                .build())
        .addMethod(
            sotw,
            ServerCalls.asyncBidiStreamingCall(
                responses -> new SotwStream(responses, serving, Optional.empty())))
        .addMethod(
            delta,
            ServerCalls.asyncBidiStreamingCall(
                responses -> new DeltaStream(responses, serving, Optional.empty())))
        .build();
  }

  /**
   * A service of {@code generated}'s name with its schema, the proto file that defines it, so that
   * gRPC server reflection describes it ({@code grpcurl list}, {@code describe}) although its
   * methods are built here, with this proxy's marshallers; the methods, made with {@code
   * toBuilder}, keep their generated schema too.
   */
  static ServiceDescriptor.Builder describedAs(ServiceDescriptor generated) {
    return ServiceDescriptor.newBuilder(generated.getName())
        .setSchemaDescriptor(generated.getSchemaDescriptor());
  }

  /**
   * {@code method} with its requests read by {@link RequestMarshaller#SOTW} and its responses
   * written from their shared, pre-encoded resources ({@link EncodedResponse}).
   */
  static MethodDescriptor<DiscoveryRequest, EncodedResponse> sotw(
      MethodDescriptor<DiscoveryRequest, DiscoveryResponse> method) {
    return method.toBuilder(RequestMarshaller.SOTW, EncodedResponse.SOTW).build();
  }

  /**
   * {@code method} with its requests read by {@link RequestMarshaller#DELTA} and its responses
   * written from their shared, pre-encoded body ({@link EncodedResponse}).
   */
  static MethodDescriptor<DeltaDiscoveryRequest, EncodedResponse> delta(
      MethodDescriptor<DeltaDiscoveryRequest, DeltaDiscoveryResponse> method) {
    return method.toBuilder(RequestMarshaller.DELTA, EncodedResponse.DELTA).build();
  }
}
