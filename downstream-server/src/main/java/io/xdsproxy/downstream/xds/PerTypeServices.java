package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.service.cluster.v3.ClusterDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.endpoint.v3.EndpointDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.listener.v3.ListenerDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.route.v3.RouteDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.route.v3.ScopedRoutesDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.route.v3.VirtualHostDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.runtime.v3.RuntimeDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.secret.v3.SecretDiscoveryServiceGrpc;
import io.grpc.MethodDescriptor;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.stub.ServerCalls;
import io.xdsproxy.core.TypeUrl;
import java.io.InputStream;
import java.util.List;
import java.util.Optional;

/**
 * The per-type discovery services ("RPC Services and Methods for Each Variant"): one per v3
 * resource type, each with its State-of-the-World and incremental streams (VHDS is incremental
 * only). A stream of one of these serves its service's type alone; a request naming another type
 * URL ends it with INVALID_ARGUMENT.
 */
public final class PerTypeServices {

  private PerTypeServices() {}

  /**
   * One service: its generated descriptor, its type, and its two streaming methods (no SotW for
   * VHDS).
   */
  private record Service(
      ServiceDescriptor generated,
      TypeUrl type,
      MethodDescriptor<DiscoveryRequest, DiscoveryResponse> sotw,
      MethodDescriptor<DeltaDiscoveryRequest, DeltaDiscoveryResponse> delta) {}

  private static final List<Service> SERVICES =
      List.of(
          new Service(
              ListenerDiscoveryServiceGrpc.getServiceDescriptor(),
              TypeUrl.LISTENER,
              ListenerDiscoveryServiceGrpc.getStreamListenersMethod(),
              ListenerDiscoveryServiceGrpc.getDeltaListenersMethod()),
          new Service(
              RouteDiscoveryServiceGrpc.getServiceDescriptor(),
              TypeUrl.ROUTE,
              RouteDiscoveryServiceGrpc.getStreamRoutesMethod(),
              RouteDiscoveryServiceGrpc.getDeltaRoutesMethod()),
          new Service(
              ScopedRoutesDiscoveryServiceGrpc.getServiceDescriptor(),
              TypeUrl.SCOPED_ROUTE,
              ScopedRoutesDiscoveryServiceGrpc.getStreamScopedRoutesMethod(),
              ScopedRoutesDiscoveryServiceGrpc.getDeltaScopedRoutesMethod()),
          new Service(
              VirtualHostDiscoveryServiceGrpc.getServiceDescriptor(),
              TypeUrl.VIRTUAL_HOST,
              null,
              VirtualHostDiscoveryServiceGrpc.getDeltaVirtualHostsMethod()),
          new Service(
              ClusterDiscoveryServiceGrpc.getServiceDescriptor(),
              TypeUrl.CLUSTER,
              ClusterDiscoveryServiceGrpc.getStreamClustersMethod(),
              ClusterDiscoveryServiceGrpc.getDeltaClustersMethod()),
          new Service(
              EndpointDiscoveryServiceGrpc.getServiceDescriptor(),
              TypeUrl.ENDPOINT,
              EndpointDiscoveryServiceGrpc.getStreamEndpointsMethod(),
              EndpointDiscoveryServiceGrpc.getDeltaEndpointsMethod()),
          new Service(
              SecretDiscoveryServiceGrpc.getServiceDescriptor(),
              TypeUrl.SECRET,
              SecretDiscoveryServiceGrpc.getStreamSecretsMethod(),
              SecretDiscoveryServiceGrpc.getDeltaSecretsMethod()),
          new Service(
              RuntimeDiscoveryServiceGrpc.getServiceDescriptor(),
              TypeUrl.RUNTIME,
              RuntimeDiscoveryServiceGrpc.getStreamRuntimeMethod(),
              RuntimeDiscoveryServiceGrpc.getDeltaRuntimeMethod()));

  /** The definitions to add to the xDS server. */
  public static List<ServerServiceDefinition> definitions(ServerContext serving) {
    return SERVICES.stream().map(service -> definition(service, serving)).toList();
  }

  private static ServerServiceDefinition definition(Service service, ServerContext serving) {
    Optional<TypeUrl> type = Optional.of(service.type());
    ServiceDescriptor.Builder descriptor =
        AggregatedDiscoveryService.describedAs(service.generated());
    MethodDescriptor<InputStream, EncodedResponse> sotw = null;
    if (service.sotw() != null) {
      sotw = AggregatedDiscoveryService.sotw(service.sotw());
      descriptor.addMethod(sotw);
      serving.metrics().serves(ClientStream.SOTW, service.type().shortName());
    }
    MethodDescriptor<InputStream, EncodedResponse> delta =
        AggregatedDiscoveryService.delta(service.delta());
    descriptor.addMethod(delta);
    serving.metrics().serves(ClientStream.DELTA, service.type().shortName());
    ServerServiceDefinition.Builder definition =
        ServerServiceDefinition.builder(descriptor.build());
    if (sotw != null) {
      definition.addMethod(
          sotw,
          ServerCalls.asyncBidiStreamingCall(
              responses -> new SotwStream(responses, serving, type)));
    }
    definition.addMethod(
        delta,
        ServerCalls.asyncBidiStreamingCall(responses -> new DeltaStream(responses, serving, type)));
    return definition.build();
  }
}
