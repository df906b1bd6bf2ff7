package io.xdsproxy.upstream.testing;

import com.google.protobuf.Message;
import io.envoyproxy.controlplane.cache.Resources;
import io.envoyproxy.controlplane.cache.SnapshotResources;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * go-control-plane's {@code cache.Snapshot} as {@code NewSnapshot(version, resources)} makes it
 * (pkg/cache/v3/snapshot.go): every type carries the one version ({@code NewResources(version, …)}
 * per type), resources are indexed by name ({@code IndexResourcesByName}, resources.go). It is
 * built from java-control-plane's {@link Snapshot}, which the suite's tests already write; that
 * class is only the carrier. Also the type facts of pkg/cache/v3/resource.go and
 * pkg/cache/types/types.go that every cache of the model reads.
 */
record GoSnapshot(String version, Map<String, Map<String, GoResource>> byType) {

  /** The types a java-control-plane Snapshot carries, in go's {@code ResponseType} order. */
  static final List<String> TYPES =
      List.of(
          Resources.V3.CLUSTER_TYPE_URL,
          Resources.V3.ENDPOINT_TYPE_URL,
          Resources.V3.LISTENER_TYPE_URL,
          Resources.V3.ROUTE_TYPE_URL,
          Resources.V3.SECRET_TYPE_URL);

  private static final String PREFIX = "type.googleapis.com/";

  /**
   * pkg/cache/types/types.go {@code ResponseType}: "The order of this enum MATTERS!" — the ADS
   * cache answers watches in this order ({@code orderResponseWatches}, status.go; {@code
   * keys.Less}, order.go).
   */
  private static final List<String> RESPONSE_TYPE_ORDER =
      List.of(
          PREFIX + "envoy.config.cluster.v3.Cluster",
          PREFIX + "envoy.config.endpoint.v3.ClusterLoadAssignment",
          PREFIX + "envoy.config.endpoint.v3.LbEndpoint",
          PREFIX + "envoy.config.listener.v3.Listener",
          PREFIX + "envoy.config.route.v3.RouteConfiguration",
          PREFIX + "envoy.config.route.v3.ScopedRouteConfiguration",
          PREFIX + "envoy.config.route.v3.VirtualHost",
          PREFIX + "envoy.extensions.transport_sockets.tls.v3.Secret",
          PREFIX + "envoy.service.runtime.v3.Runtime",
          PREFIX + "envoy.config.core.v3.TypedExtensionConfig",
          PREFIX + "ratelimit.config.ratelimit.v3.RateLimitConfig");

  /**
   * go's snapshot of {@code snapshot}, its resources named in {@code doNotCache} marked so. go's
   * {@code NewSnapshot} takes one version, so a java snapshot whose types carry different versions
   * has no go equivalent.
   */
  static GoSnapshot from(Snapshot snapshot, Set<String> doNotCache) {
    List<SnapshotResources<? extends Message>> perType =
        List.of(
            snapshot.clusters(),
            snapshot.endpoints(),
            snapshot.listeners(),
            snapshot.routes(),
            snapshot.secrets());
    Set<String> versions = Set.copyOf(perType.stream().map(SnapshotResources::version).toList());
    if (versions.size() != 1) {
      throw new IllegalArgumentException(
          "go-control-plane's NewSnapshot gives every type one version, this "
              + "snapshot has "
              + versions);
    }
    Map<String, Map<String, GoResource>> byType = new LinkedHashMap<>();
    for (int i = 0; i < TYPES.size(); i++) {
      Map<String, GoResource> resources = new TreeMap<>();
      perType
          .get(i)
          .resources()
          .forEach(
              (name, message) ->
                  resources.put(name, GoResource.of(name, message, doNotCache.contains(name))));
      byType.put(TYPES.get(i), Map.copyOf(resources));
    }
    return new GoSnapshot(versions.iterator().next(), Map.copyOf(byType));
  }

  /** {@code Snapshot.GetVersion}: "" for a type the snapshot was not made with. */
  String version(String typeUrl) {
    return byType.containsKey(typeUrl) ? version : "";
  }

  /** {@code Snapshot.GetResourcesAndTTL}: empty for a type the snapshot was not made with. */
  Map<String, GoResource> resources(String typeUrl) {
    return byType.getOrDefault(typeUrl, Map.of());
  }

  /**
   * {@code GetResponseType} (pkg/cache/v3/resource.go): the type's place in the ADS order,
   * UnknownType last.
   */
  static int responseType(String typeUrl) {
    int index = RESPONSE_TYPE_ORDER.indexOf(typeUrl);
    return index < 0 ? RESPONSE_TYPE_ORDER.size() : index;
  }

  /**
   * {@code ResourceRequiresFullStateInSotw} (pkg/cache/v3/resource.go): Cluster and Listener
   * answers must carry every subscribed resource, a missing one meaning deleted.
   */
  static boolean requiresFullStateInSotw(String typeUrl) {
    return typeUrl.equals(Resources.V3.CLUSTER_TYPE_URL)
        || typeUrl.equals(Resources.V3.LISTENER_TYPE_URL);
  }
}
