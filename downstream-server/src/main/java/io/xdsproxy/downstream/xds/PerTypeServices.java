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
import io.grpc.stub.ServerCalls;
import io.xdsproxy.core.TypeUrl;
import java.util.List;
import java.util.Optional;

/**
 * The per-type discovery services ("RPC Services and Methods for Each Variant"): one per v3 resource
 * type, each with its State-of-the-World and incremental streams (VHDS is incremental only). A
 * stream of one of these serves its service's type alone; a request naming another type URL ends it
 * with INVALID_ARGUMENT.
 */
public final class PerTypeServices {

  private PerTypeServices() {}

  /** One service: its name, its type, and its two streaming methods (no SotW for VHDS). */
  private record Service(
      String name,
      TypeUrl type,
      MethodDescriptor<DiscoveryRequest, DiscoveryResponse> sotw,
      MethodDescriptor<DeltaDiscoveryRequest, DeltaDiscoveryResponse> delta) {}

  private static final List<Service> SERVICES = List.of(
      new Service(ListenerDiscoveryServiceGrpc.SERVICE_NAME, TypeUrl.LISTENER,
          ListenerDiscoveryServiceGrpc.getStreamListenersMethod(), ListenerDiscoveryServiceGrpc.getDeltaListenersMethod()),
      new Service(RouteDiscoveryServiceGrpc.SERVICE_NAME, TypeUrl.ROUTE,
          RouteDiscoveryServiceGrpc.getStreamRoutesMethod(), RouteDiscoveryServiceGrpc.getDeltaRoutesMethod()),
      new Service(ScopedRoutesDiscoveryServiceGrpc.SERVICE_NAME, TypeUrl.SCOPED_ROUTE,
          ScopedRoutesDiscoveryServiceGrpc.getStreamScopedRoutesMethod(),
          ScopedRoutesDiscoveryServiceGrpc.getDeltaScopedRoutesMethod()),
      new Service(VirtualHostDiscoveryServiceGrpc.SERVICE_NAME, TypeUrl.VIRTUAL_HOST,
          null, VirtualHostDiscoveryServiceGrpc.getDeltaVirtualHostsMethod()),
      new Service(ClusterDiscoveryServiceGrpc.SERVICE_NAME, TypeUrl.CLUSTER,
          ClusterDiscoveryServiceGrpc.getStreamClustersMethod(), ClusterDiscoveryServiceGrpc.getDeltaClustersMethod()),
      new Service(EndpointDiscoveryServiceGrpc.SERVICE_NAME, TypeUrl.ENDPOINT,
          EndpointDiscoveryServiceGrpc.getStreamEndpointsMethod(), EndpointDiscoveryServiceGrpc.getDeltaEndpointsMethod()),
      new Service(SecretDiscoveryServiceGrpc.SERVICE_NAME, TypeUrl.SECRET,
          SecretDiscoveryServiceGrpc.getStreamSecretsMethod(), SecretDiscoveryServiceGrpc.getDeltaSecretsMethod()),
      new Service(RuntimeDiscoveryServiceGrpc.SERVICE_NAME, TypeUrl.RUNTIME,
          RuntimeDiscoveryServiceGrpc.getStreamRuntimeMethod(), RuntimeDiscoveryServiceGrpc.getDeltaRuntimeMethod()));

  /** The definitions to add to the xDS server. */
  public static List<ServerServiceDefinition> definitions(Serving serving) {
    return SERVICES.stream().map(service -> definition(service, serving)).toList();
  }

  private static ServerServiceDefinition definition(Service service, Serving serving) {
    Optional<TypeUrl> type = Optional.of(service.type());
    ServerServiceDefinition.Builder definition = ServerServiceDefinition.builder(service.name());
    if (service.sotw() != null) {
      definition.addMethod(AggregatedDiscoveryService.sotw(service.sotw()), ServerCalls.asyncBidiStreamingCall(
          responses -> new SotwStream(responses, serving, type, PeerInterceptor.currentPeer())));
    }
    definition.addMethod(AggregatedDiscoveryService.delta(service.delta()), ServerCalls.asyncBidiStreamingCall(
        responses -> new DeltaStream(responses, serving, type, PeerInterceptor.currentPeer())));
    return definition.build();
  }
}
