package io.xdsproxy.upstream.testing;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.config.listener.v3.Filter;
import io.envoyproxy.envoy.config.listener.v3.FilterChain;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.EnvoyMux.DecodedResource;
import io.xdsproxy.upstream.testing.EnvoyMux.FailureReason;
import io.xdsproxy.upstream.testing.EnvoyMux.RejectedUpdate;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The model of LDS and RDS as far as xDS sees them: {@code LdsApiImpl}
 * (source/common/listener_manager/lds_api.cc) and one {@code RdsRouteConfigSubscription} per route
 * name an HttpConnectionManager names (source/common/rds/rds_route_config_subscription.cc, formerly
 * source/common/router/rds_impl.cc), shared by every listener that names it, as {@code
 * RouteConfigProviderManager} shares them. Listeners and routes are kept as delivered; listener
 * warming on RDS is not modelled. Confined to the client's main thread.
 */
final class EnvoyListenerManager {

  private static final String HTTP_CONNECTION_MANAGER =
      TypeUrl.PREFIX + HttpConnectionManager.getDescriptor().getFullName();

  private final EnvoyMux mux;
  private final Consumer<String> log;
  private final Map<String, Listener> listeners = new LinkedHashMap<>();
  private final Map<String, RouteConfiguration> routes = new LinkedHashMap<>();

  /**
   * One watch per route name ever named. Envoy drops a route subscription only when the last
   * listener holding it is destroyed, which for a replaced or removed listener is after its drain
   * (--drain-time-s, 600 s by default); within a test that is never, so the model keeps them.
   */
  private final Map<String, EnvoyMux.Watch> routeSubscriptions = new LinkedHashMap<>();

  EnvoyListenerManager(EnvoyMux mux, Consumer<String> log) {
    this.mux = mux;
    this.log = log;
  }

  /** The LDS init target: {@code subscription_->start({})}, the wildcard LDS subscription. */
  void start() {
    mux.addWatch(TypeUrl.LISTENER, Set.of(), new LdsCallbacks());
  }

  Map<String, Listener> listeners() {
    return Map.copyOf(listeners);
  }

  Map<String, RouteConfiguration> routes() {
    return Map.copyOf(routes);
  }

  private final class LdsCallbacks implements EnvoyMux.SubscriptionCallbacks {

    /** {@code LdsApiImpl::onConfigUpdate} (SotW): listeners the response lacks are removed. */
    @Override
    public void onConfigUpdate(List<DecodedResource> resources, String versionInfo) {
      Set<String> toRemove = new HashSet<>(listeners.keySet());
      resources.forEach(resource -> toRemove.remove(resource.name()));
      onConfigUpdate(resources, List.copyOf(toRemove), versionInfo);
    }

    /**
     * {@code LdsApiImpl::onConfigUpdate}: RDS (with SRDS and SDS) is paused for the update, so new
     * route names go out in one request after it; removals first, then additions; a duplicate or
     * unusable listener is reported (NACK) after the rest are applied.
     */
    @Override
    public void onConfigUpdate(
        List<DecodedResource> added, List<String> removed, String systemVersionInfo) {
      EnvoyMux.Resume resume = mux.pause(TypeUrl.ROUTE, TypeUrl.SCOPED_ROUTE, TypeUrl.SECRET);
      List<String> errors = new ArrayList<>();
      try {
        removed.forEach(listeners::remove);
        Set<String> names = new HashSet<>();
        for (DecodedResource resource : added) {
          if (!(resource.resource() instanceof Listener listener)) {
            errors.add(resource.name() + ": no Listener in the resource");
            continue;
          }
          if (!names.add(listener.getName())) {
            errors.add(
                listener.getName() + ": duplicate listener " + listener.getName() + " found");
            continue;
          }
          try {
            addOrUpdateListener(listener);
          } catch (RejectedUpdate invalid) {
            errors.add(listener.getName() + ": " + invalid.getMessage());
          }
        }
      } finally {
        resume.run();
      }
      if (!errors.isEmpty()) {
        throw new RejectedUpdate("Error adding/updating listener(s) " + String.join("\n", errors));
      }
    }

    @Override
    public void onConfigUpdateFailed(FailureReason reason) {
      // LdsApiImpl::onConfigUpdateFailed only marks its init target ready.
    }
  }

  /**
   * {@code ListenerManagerImpl::addOrUpdateListener}, as far as xDS sees it: an API listener over
   * LDS is refused ("can only be added via bootstrap configuration"); an HttpConnectionManager with
   * {@code rds} starts the subscription of its route name unless one exists.
   */
  private void addOrUpdateListener(Listener listener) {
    if (listener.hasApiListener()) {
      log.accept(
          "listener "
              + listener.getName()
              + " not added: an API listener can only be added via bootstrap");
      return;
    }
    Set<String> routeNames = routeNames(listener);
    listeners.put(listener.getName(), listener);
    for (String routeName : routeNames) {
      if (!routeSubscriptions.containsKey(routeName)) {
        routeSubscriptions.put(
            routeName, mux.addWatch(TypeUrl.ROUTE, Set.of(routeName), new RdsCallbacks(routeName)));
      }
    }
  }

  /**
   * The {@code rds.route_config_name} of every HttpConnectionManager in the listener's filter
   * chains.
   */
  private static Set<String> routeNames(Listener listener) {
    List<FilterChain> chains = new ArrayList<>(listener.getFilterChainsList());
    if (listener.hasDefaultFilterChain()) {
      chains.add(listener.getDefaultFilterChain());
    }
    Set<String> names = new LinkedHashSet<>();
    for (FilterChain chain : chains) {
      for (Filter filter : chain.getFiltersList()) {
        Any config = filter.getTypedConfig();
        if (!config.getTypeUrl().equals(HTTP_CONNECTION_MANAGER)) {
          continue;
        }
        try {
          HttpConnectionManager manager = config.unpack(HttpConnectionManager.class);
          if (manager.hasRds()) {
            names.add(manager.getRds().getRouteConfigName());
          }
        } catch (InvalidProtocolBufferException e) {
          throw new RejectedUpdate("Unable to unpack as HttpConnectionManager: " + e.getMessage());
        }
      }
    }
    return names;
  }

  /** {@code RdsRouteConfigSubscription}: the route configuration of one name. */
  private final class RdsCallbacks implements EnvoyMux.SubscriptionCallbacks {
    private final String routeName;

    RdsCallbacks(String routeName) {
      this.routeName = routeName;
    }

    /**
     * {@code RdsRouteConfigSubscription::onConfigUpdate}: exactly one configuration, of this name.
     */
    @Override
    public void onConfigUpdate(List<DecodedResource> resources, String versionInfo) {
      if (resources.isEmpty()) {
        return;
      }
      if (resources.size() != 1) {
        throw new RejectedUpdate("Unexpected RDS resource length: " + resources.size());
      }
      if (!(resources.get(0).resource() instanceof RouteConfiguration route)
          || !route.getName().equals(routeName)) {
        throw new RejectedUpdate(
            "Unexpected RDS configuration (expecting "
                + routeName
                + "): "
                + resources.get(0).name());
      }
      routes.put(routeName, route);
    }

    /** Delta: a removal is logged and ignored ("attempting to remove a resource … Ignoring"). */
    @Override
    public void onConfigUpdate(
        List<DecodedResource> added, List<String> removed, String systemVersionInfo) {
      if (!removed.isEmpty()) {
        log.accept(
            "Server sent a delta RDS update attempting to remove a resource (name: "
                + removed.get(0)
                + "). Ignoring.");
      }
      if (!added.isEmpty()) {
        onConfigUpdate(added, systemVersionInfo);
      }
    }

    @Override
    public void onConfigUpdateFailed(FailureReason reason) {
      // RdsRouteConfigSubscription::onConfigUpdateFailed only marks its init target ready.
    }
  }
}
