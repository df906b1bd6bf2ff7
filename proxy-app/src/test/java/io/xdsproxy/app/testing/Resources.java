package io.xdsproxy.app.testing;

import com.google.protobuf.Any;
import com.google.protobuf.UInt32Value;
import com.google.protobuf.util.Durations;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.AggregatedConfigSource;
import io.envoyproxy.envoy.config.core.v3.ApiVersion;
import io.envoyproxy.envoy.config.core.v3.ConfigSource;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.ApiListener;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.config.route.v3.RouteAction;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.RouteMatch;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.filters.http.router.v3.Router;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.Rds;
import io.xdsproxy.core.testing.Assignments;
import java.util.Arrays;
import java.util.List;

/** The xDS resources of one gRPC service, the shape grpc-java's xDS client accepts. */
public final class Resources {

  private Resources() {}

  /**
   * java-control-plane's snapshot of service "greeter": its listener, route, cluster and the
   * cluster's endpoint on {@code port} of loopback.
   */
  public static Snapshot greeterAt(int port, String version) {
    return Snapshot.create(
        List.of(cluster("greeter-cluster")),
        List.of(endpoints("greeter-cluster", port)),
        List.of(listener("greeter", "greeter-route")),
        List.of(route("greeter-route", "greeter-cluster")),
        List.of(),
        version);
  }

  /**
   * java-control-plane's snapshot of clusters named {@code clusters}, each with its endpoint on
   * {@code port}.
   */
  public static Snapshot clustersAt(int port, String version, String... clusters) {
    return Snapshot.create(
        Arrays.stream(clusters).map(Resources::cluster).toList(),
        Arrays.stream(clusters).map(name -> endpoints(name, port)).toList(),
        List.of(),
        List.of(),
        List.of(),
        version);
  }

  private static ConfigSource ads() {
    return ConfigSource.newBuilder()
        .setAds(AggregatedConfigSource.getDefaultInstance())
        .setResourceApiVersion(ApiVersion.V3)
        .build();
  }

  /** A client-side (API) listener for {@code name}, its routes in RDS resource {@code route}. */
  public static Listener listener(String name, String route) {
    HttpConnectionManager manager =
        HttpConnectionManager.newBuilder()
            .setRds(Rds.newBuilder().setConfigSource(ads()).setRouteConfigName(route))
            .addHttpFilters(
                HttpFilter.newBuilder()
                    .setName("envoy.filters.http.router")
                    .setTypedConfig(Any.pack(Router.getDefaultInstance())))
            .build();
    return Listener.newBuilder()
        .setName(name)
        .setApiListener(ApiListener.newBuilder().setApiListener(Any.pack(manager)))
        .build();
  }

  /** A route configuration sending everything to {@code cluster}. */
  public static RouteConfiguration route(String name, String cluster) {
    return RouteConfiguration.newBuilder()
        .setName(name)
        .addVirtualHosts(
            VirtualHost.newBuilder()
                .setName(name + "-vhost")
                .addDomains("*")
                .addRoutes(
                    Route.newBuilder()
                        .setMatch(RouteMatch.newBuilder().setPrefix(""))
                        .setRoute(RouteAction.newBuilder().setCluster(cluster))))
        .build();
  }

  /** An EDS cluster whose endpoints come over ADS. */
  public static Cluster cluster(String name) {
    return Cluster.newBuilder()
        .setName(name)
        .setType(Cluster.DiscoveryType.EDS)
        .setEdsClusterConfig(Cluster.EdsClusterConfig.newBuilder().setEdsConfig(ads()))
        .setLbPolicy(Cluster.LbPolicy.ROUND_ROBIN)
        .setConnectTimeout(Durations.fromSeconds(1))
        .build();
  }

  /** The endpoints of {@code cluster}: one, on loopback at {@code port}. */
  public static ClusterLoadAssignment endpoints(String cluster, int port) {
    ClusterLoadAssignment one = Assignments.oneEndpoint(cluster, port);
    // grpc-java ignores a locality without a weight.
    return one.toBuilder()
        .setEndpoints(
            0,
            one.getEndpoints(0).toBuilder()
                .setLocality(Locality.newBuilder().setRegion("test").setZone("test-a"))
                .setLoadBalancingWeight(UInt32Value.of(1)))
        .build();
  }
}
