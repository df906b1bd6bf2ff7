package io.xdsproxy.upstream.testing;

import com.google.protobuf.Any;
import com.google.protobuf.BoolValue;
import com.google.protobuf.Message;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.Secret;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * One node group's configuration in {@link IstiodModel}, standing for what istiod would build for
 * those proxies from its push context, and istiod's generators over it (pilot/pkg/xds: cds.go,
 * eds.go, lds.go, rds.go, sds.go). A snapshot is only the carrier of the resources; its versions
 * are ignored, as istiod versions every response with its own push version.
 *
 * <p>Generators see the names of a watch in sorted order, where istiod iterates a Go set: the order
 * of resources in one response is not part of istiod's behaviour.
 */
record IstiodConfig(
    Map<String, Cluster> clusters,
    Map<String, ClusterLoadAssignment> endpoints,
    Map<String, Listener> listeners,
    Map<String, RouteConfiguration> routes,
    Map<String, Secret> secrets,
    Set<String> doNotCache) {

  /**
   * istiod's type URLs (pkg/model/xds.go), the ones the model generates and ECDS, which it only
   * classifies.
   */
  static final String CLUSTER_TYPE = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

  static final String ENDPOINT_TYPE =
      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
  static final String LISTENER_TYPE = "type.googleapis.com/envoy.config.listener.v3.Listener";
  static final String ROUTE_TYPE = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
  static final String SECRET_TYPE =
      "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";
  static final String EXTENSION_CONFIGURATION_TYPE =
      "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig";

  /**
   * ads.go {@code PushOrder}: the types a push goes through first, in this order. istiod lists
   * Address, Workload and WorkloadAuthorization after Secret; the model has no generator for them.
   */
  static final List<String> PUSH_ORDER =
      List.of(CLUSTER_TYPE, ENDPOINT_TYPE, LISTENER_TYPE, ROUTE_TYPE, SECRET_TYPE);

  /** What a proxy gets before any configuration is set for its group. */
  static final IstiodConfig EMPTY =
      new IstiodConfig(Map.of(), Map.of(), Map.of(), Map.of(), Map.of(), Set.of());

  static IstiodConfig of(Snapshot snapshot, Set<String> doNotCache) {
    return new IstiodConfig(
        Map.copyOf(snapshot.clusters().resources()),
        Map.copyOf(snapshot.endpoints().resources()),
        Map.copyOf(snapshot.listeners().resources()),
        Map.copyOf(snapshot.routes().resources()),
        Map.copyOf(snapshot.secrets().resources()),
        Set.copyOf(doNotCache));
  }

  /**
   * pkg/xds/server.go {@code IsWildcardTypeURL}: Secret, ClusterLoadAssignment, RouteConfiguration
   * and ECDS are not wildcard; Cluster, Listener and every other type are.
   */
  static boolean isWildcardTypeUrl(String typeUrl) {
    return !(typeUrl.equals(SECRET_TYPE)
        || typeUrl.equals(ENDPOINT_TYPE)
        || typeUrl.equals(ROUTE_TYPE)
        || typeUrl.equals(EXTENSION_CONFIGURATION_TYPE));
  }

  /**
   * What a generator builds: istiod's per-type "needs push" checks ({@code cdsNeedsPush}, {@code
   * edsNeedsPush}, …) and the partial pushes of EDS ({@code canSendPartialFullPushes}) and SDS
   * (updated secrets only, when not forced). A request is a forced push, so it builds {@link
   * #EVERYTHING}.
   */
  sealed interface Build {
    Build NOTHING = new Nothing();
    Build EVERYTHING = new Everything();

    record Nothing() implements Build {}

    record Everything() implements Build {}

    /** Only these names of the watch (the changed ones), an incremental push. */
    record OnlyChanged(Set<String> names) implements Build {}
  }

  /**
   * What one generation produced; {@code incremental} as istiod's {@code XdsLogDetails.Incremental}
   * or a delta generation ({@code usedDelta}): pushDeltaXds then reports no removals.
   */
  record Generated(List<Resource> resources, boolean incremental) {
    Set<String> names() {
      Set<String> names = new HashSet<>();
      resources.forEach(resource -> names.add(resource.getName()));
      return names;
    }
  }

  /**
   * Runs the generator of {@code typeUrl} over the watched {@code names}. Empty when istiod's
   * generator returns nil, so that no response goes out (xdsgen.go {@code pushXds}: "SKIP"): the
   * push does not concern the type, or a named type built nothing (its Go slice stayed nil), or the
   * model has no generator for the type. Cluster and Listener build a (possibly empty) list
   * whatever the names.
   */
  Optional<Generated> generate(String typeUrl, Set<String> names, Build build) {
    if (build instanceof Build.Nothing) {
      return Optional.empty();
    }
    boolean incremental = build instanceof Build.OnlyChanged;
    Set<String> built = new TreeSet<>(names);
    if (build instanceof Build.OnlyChanged changed) {
      built.retainAll(changed.names());
    }
    List<Resource> resources = new ArrayList<>();
    switch (typeUrl) {
      case CLUSTER_TYPE -> {
        // cds.go Generate: BuildClusters(proxy, req) never looks at the watched names.
        new TreeSet<>(clusters.keySet())
            .forEach(name -> resources.add(resource(name, clusters.get(name))));
        return Optional.of(new Generated(resources, false));
      }
      case LISTENER_TYPE -> {
        // lds.go Generate: BuildListeners(proxy, push), the watch is ignored.
        new TreeSet<>(listeners.keySet())
            .forEach(name -> resources.add(resource(name, listeners.get(name))));
        return Optional.of(new Generated(resources, false));
      }
      case ENDPOINT_TYPE ->
          // eds.go buildEndpoints; endpoints/endpoint_builder.go BuildClusterLoadAssignment answers
          // a name it has no service for with buildEmptyClusterLoadAssignment: only cluster_name
          // set.
          built.forEach(
              name ->
                  resources.add(
                      resource(
                          name,
                          endpoints.getOrDefault(
                              name,
                              ClusterLoadAssignment.newBuilder().setClusterName(name).build()))));
      case ROUTE_TYPE ->
          // networking/core/httproute.go BuildHTTPRoutes, sidecar: an unknown route name gets an
          // empty RouteConfiguration with that name, no virtual hosts and validate_clusters false.
          built.forEach(
              name ->
                  resources.add(
                      resource(
                          name,
                          routes.getOrDefault(
                              name,
                              RouteConfiguration.newBuilder()
                                  .setName(name)
                                  .setValidateClusters(BoolValue.of(false))
                                  .build()))));
      case SECRET_TYPE ->
          // sds.go Generate: a secret that cannot be found is left out, not answered empty.
          built.stream()
              .filter(secrets::containsKey)
              .forEach(name -> resources.add(resource(name, secrets.get(name))));
      default -> {
        // The model has no generator for other types (istiod falls back to its "api" generator).
        return Optional.empty();
      }
    }
    return resources.isEmpty()
        ? Optional.empty()
        : Optional.of(new Generated(resources, incremental));
  }

  /**
   * A generated resource as pkg/xds keeps it, a {@code discovery.v3.Resource} with name and
   * resource and no version (istiod sets none). {@code cache_control.do_not_cache} is this suite's
   * extension; istiod never sets it.
   */
  private Resource resource(String name, Message message) {
    Resource.Builder resource = Resource.newBuilder().setName(name).setResource(Any.pack(message));
    if (doNotCache.contains(name)) {
      resource.getCacheControlBuilder().setDoNotCache(true);
    }
    return resource.build();
  }

  /**
   * The change from {@code before} to {@code after}, by type, standing for the {@code
   * ConfigsUpdated} of istiod's push request: a resource changed when it was added, removed,
   * rewritten, or its do_not_cache mark flipped.
   */
  static ConfigChange changeBetween(IstiodConfig before, IstiodConfig after) {
    Set<String> types = new HashSet<>();
    Set<String> clusters =
        changedNames(before.clusters, after.clusters, before.doNotCache, after.doNotCache);
    Set<String> endpoints =
        changedNames(before.endpoints, after.endpoints, before.doNotCache, after.doNotCache);
    Set<String> listeners =
        changedNames(before.listeners, after.listeners, before.doNotCache, after.doNotCache);
    Set<String> routes =
        changedNames(before.routes, after.routes, before.doNotCache, after.doNotCache);
    Set<String> secrets =
        changedNames(before.secrets, after.secrets, before.doNotCache, after.doNotCache);
    if (!clusters.isEmpty()) {
      types.add(CLUSTER_TYPE);
    }
    if (!endpoints.isEmpty()) {
      types.add(ENDPOINT_TYPE);
    }
    if (!listeners.isEmpty()) {
      types.add(LISTENER_TYPE);
    }
    if (!routes.isEmpty()) {
      types.add(ROUTE_TYPE);
    }
    if (!secrets.isEmpty()) {
      types.add(SECRET_TYPE);
    }
    return new ConfigChange(Set.copyOf(types), endpoints, secrets);
  }

  private static <T> Set<String> changedNames(
      Map<String, T> before,
      Map<String, T> after,
      Set<String> markedBefore,
      Set<String> markedAfter) {
    Set<String> changed = new HashSet<>();
    Stream.concat(before.keySet().stream(), after.keySet().stream())
        .forEach(
            name -> {
              if (!Objects.equals(before.get(name), after.get(name))
                  || markedBefore.contains(name) != markedAfter.contains(name)) {
                changed.add(name);
              }
            });
    return Set.copyOf(changed);
  }

  /**
   * Which types of a group's configuration changed, and which endpoints and secrets: what a push
   * needs to decide, per watched type, what to build. The model maps a snapshot change onto
   * istiod's config kinds this way:
   *
   * <ul>
   *   <li>only endpoints changed: an Endpoints event ({@code ConfigsUpdated = {Endpoints}}, not
   *       forced). CDS, LDS and RDS skip it (Endpoints is in their skipped kinds); EDS sends only
   *       the changed watched assignments (eds.go {@code canSendPartialFullPushes} and {@code
   *       affectedService}).
   *   <li>a cluster changed: a config kind that both CDS and EDS act on and that EDS cannot narrow
   *       (as a root-namespace PeerAuthentication): CDS, then every watched assignment.
   *   <li>endpoints changed with anything else: EDS cannot narrow either (any kind that is not
   *       delta-aware turns {@code canSendPartialFullPushes} off), so every watched assignment.
   *   <li>listeners or routes changed: their own type, everything watched.
   *   <li>secrets changed: a Secret event; sds.go sends only the changed watched secrets.
   * </ul>
   *
   * istiod's own CDS delta (cluster.go {@code BuildDeltaClusters}, for ServiceEntry changes) and
   * EDS narrowing by service are not modelled: a changed cluster resends every cluster and
   * assignment.
   */
  record ConfigChange(Set<String> types, Set<String> endpoints, Set<String> secrets) {

    boolean isEmpty() {
      return types.isEmpty();
    }

    /**
     * ads.go pushConnection: an Endpoints-only push skips computeProxyState, so the proxy keeps its
     * push context.
     */
    boolean onlyEndpoints() {
      return types.equals(Set.of(ENDPOINT_TYPE));
    }

    Build buildFor(String typeUrl) {
      return switch (typeUrl) {
        case ENDPOINT_TYPE ->
            onlyEndpoints()
                ? new Build.OnlyChanged(endpoints)
                : types.contains(CLUSTER_TYPE) || types.contains(ENDPOINT_TYPE)
                    ? Build.EVERYTHING
                    : Build.NOTHING;
        case SECRET_TYPE ->
            types.contains(SECRET_TYPE) ? new Build.OnlyChanged(secrets) : Build.NOTHING;
        default -> types.contains(typeUrl) ? Build.EVERYTHING : Build.NOTHING;
      };
    }
  }
}
