package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.Status;
import io.grpc.StatusException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * How go-control-plane users serve several types and node groups from {@link GoLinearCache}s: a
 * {@code MuxCache} (pkg/cache/v3/mux.go) whose classifier picks one LinearCache per node group
 * ({@code node.cluster}) and type. A type with no cache is an error that ends the stream ("no cache
 * defined for key"). A snapshot is applied the way a user feeding LinearCaches would: for each
 * type, in go's ADS order, one {@code UpdateResources} with the resources that differ from the
 * cache's and the names it no longer has — none at all for a type where nothing differs, so its
 * version does not move.
 */
final class GoLinearCaches implements GoCache {

  /** The prefix every cache's versions carry ({@code WithVersionPrefix}). */
  static final String VERSION_PREFIX = "go-linear-";

  private record Key(String group, String typeUrl) {}

  private final Map<Key, GoLinearCache> caches = new ConcurrentHashMap<>();

  private GoLinearCache cache(String group, String typeUrl) throws StatusException {
    if (!GoSnapshot.TYPES.contains(typeUrl)) {
      throw Status.UNKNOWN.withDescription("no cache defined for key " + typeUrl).asException();
    }
    return caches.computeIfAbsent(
        new Key(group, typeUrl), key -> new GoLinearCache(key.typeUrl(), VERSION_PREFIX));
  }

  @Override
  public Runnable createWatch(
      DiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Sotw> responder)
      throws StatusException {
    return cache(request.getNode().getCluster(), request.getTypeUrl())
        .createWatch(request, subscription, responder);
  }

  @Override
  public Runnable createDeltaWatch(
      DeltaDiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Delta> responder)
      throws StatusException {
    return cache(request.getNode().getCluster(), request.getTypeUrl())
        .createDeltaWatch(request, subscription, responder);
  }

  /**
   * Brings {@code group}'s caches to {@code snapshot}'s resources; the snapshot's version is not
   * used.
   */
  void update(String group, GoSnapshot snapshot) {
    for (String typeUrl : GoSnapshot.TYPES) {
      GoLinearCache cache =
          caches.computeIfAbsent(
              new Key(group, typeUrl), key -> new GoLinearCache(typeUrl, VERSION_PREFIX));
      Map<String, GoResource> current = cache.resources();
      Map<String, GoResource> wanted = snapshot.resources(typeUrl);
      Map<String, GoResource> toUpdate = new HashMap<>();
      wanted.forEach(
          (name, resource) -> {
            GoResource had = current.get(name);
            if (had == null
                || !had.message().equals(resource.message())
                || had.doNotCache() != resource.doNotCache()) {
              toUpdate.put(name, resource);
            }
          });
      List<String> toDelete =
          current.keySet().stream().filter(name -> !wanted.containsKey(name)).sorted().toList();
      if (!toUpdate.isEmpty() || !toDelete.isEmpty()) {
        cache.updateResources(toUpdate, toDelete);
      }
    }
  }
}
