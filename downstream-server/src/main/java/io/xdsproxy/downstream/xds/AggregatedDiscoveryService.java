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
import java.io.InputStream;
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
    MethodDescriptor<InputStream, EncodedResponse> sotw =
        sotw(AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod());
    MethodDescriptor<InputStream, EncodedResponse> delta =
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
   * {@code method} with its requests handed to the stream as received, which reads them with {@link
   * RequestMarshaller#SOTW} for its call, and its responses written from their shared, pre-encoded
   * resources ({@link EncodedResponse}).
   */
  static MethodDescriptor<InputStream, EncodedResponse> sotw(
      MethodDescriptor<DiscoveryRequest, DiscoveryResponse> method) {
    return method.toBuilder(AS_RECEIVED, EncodedResponse.SOTW).build();
  }

  /**
   * {@code method} with its requests handed to the stream as received, which reads them with {@link
   * RequestMarshaller#DELTA} for its call, and its responses written from their shared, pre-encoded
   * body ({@link EncodedResponse}).
   */
  static MethodDescriptor<InputStream, EncodedResponse> delta(
      MethodDescriptor<DeltaDiscoveryRequest, DeltaDiscoveryResponse> method) {
    return method.toBuilder(AS_RECEIVED, EncodedResponse.DELTA).build();
  }

  /**
   * A message as gRPC received it, its stream handed on unread: the proxy's streams read their
   * requests themselves, since their call's last request tells the marshaller what to expect
   * ({@link StreamLane#lastNames}) while gRPC's parse has no call to go by. gRPC frees the bytes
   * once the listener's {@code onMessage} returns.
   */
  public static final MethodDescriptor.Marshaller<InputStream> AS_RECEIVED =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(InputStream value) {
          return value;
        }

        @Override
        public InputStream parse(InputStream stream) {
          return stream;
        }
      };
}
