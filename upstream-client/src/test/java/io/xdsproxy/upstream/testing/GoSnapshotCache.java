package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * go-control-plane HEAD's {@code snapshotCache} made with {@code NewSnapshotCache(true, hash,
 * logger)} (pkg/cache/v3/simple.go): ADS mode, one snapshot per node group, the group being {@code
 * node.cluster} (the {@code NodeHash} the suite's tests use). Its lock is go's {@code cache.mu}:
 * watches are created, cancelled and answered under it, from stream threads and from the thread
 * calling {@link #setSnapshot}.
 *
 * <p>Go ranges over maps in random order; the model sends resources sorted by name and answers
 * watches of one type in creation order, one of the orders go may take.
 */
final class GoSnapshotCache implements GoCache {

  /** {@code ResponseWatch} (status.go). */
  private record SotwWatch(
      DiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Sotw> responder) {

    String typeUrl() {
      return request.getTypeUrl();
    }

    boolean sendFullStateResponses() {
      return GoSnapshot.requiresFullStateInSotw(typeUrl());
    }
  }

  /** {@code DeltaResponseWatch} (status.go). */
  private record DeltaWatch(
      DeltaDiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Delta> responder) {}

  /** {@code statusInfo} (status.go): a group's open watches, by watch id. */
  private static final class Status {
    private final Map<Long, SotwWatch> watches = new LinkedHashMap<>();
    private final Map<Long, DeltaWatch> deltaWatches = new LinkedHashMap<>();
  }

  /** {@code missingRequestResource}: the ADS superset rule refused the request. */
  private static final class MissingRequestResource extends Exception {
    MissingRequestResource(List<String> missing) {
      super("missing resources in request: " + missing, null, false, false);
    }
  }

  private final Map<String, GoSnapshot> snapshots = new HashMap<>();
  private final Map<String, Status> status = new HashMap<>();
  private long watchCount;

  /**
   * {@code CreateWatch}: answered at once if {@link #createResponse} has something; otherwise a
   * watch is kept — except when the superset rule refuses the request, which is then dropped with
   * no watch ("ADS mode: not responding to request"), so no later snapshot answers it either.
   */
  @Override
  public synchronized Runnable createWatch(
      DiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Sotw> responder) {
    String group = request.getNode().getCluster();
    Status info = status.computeIfAbsent(group, g -> new Status());
    SotwWatch watch = new SotwWatch(request, subscription, responder);
    GoSnapshot snapshot = snapshots.get(group);
    if (snapshot == null) {
      return track(group, info.watches, watch);
    }
    GoResponses.Sotw response;
    try {
      response = createResponse(snapshot, watch);
    } catch (MissingRequestResource e) {
      return () -> {};
    }
    if (response != null) {
      watch.responder().accept(response);
      return () -> {};
    }
    return track(group, info.watches, watch);
  }

  /**
   * {@code SetSnapshot} then {@code respondSOTWWatches} and {@code respondDeltaWatches}: every open
   * SotW watch whose request version differs from the snapshot's is answered, in {@code
   * ResponseType} order (ADS); one the superset rule refuses is kept, unanswered. Delta watches
   * follow, in the same order, answered only if something changed for them.
   */
  synchronized void setSnapshot(String group, GoSnapshot snapshot) {
    snapshots.put(group, snapshot);
    Status info = status.get(group);
    if (info == null) {
      return;
    }
    for (Map.Entry<Long, SotwWatch> entry : inResponseTypeOrder(info.watches, SotwWatch::typeUrl)) {
      SotwWatch watch = entry.getValue();
      if (snapshot.version(watch.typeUrl()).equals(watch.request().getVersionInfo())) {
        continue;
      }
      GoResponses.Sotw response;
      try {
        response = createResponse(snapshot, watch);
      } catch (MissingRequestResource e) {
        continue;
      }
      if (response != null) {
        watch.responder().accept(response);
        info.watches.remove(entry.getKey());
      }
    }
    for (Map.Entry<Long, DeltaWatch> entry :
        inResponseTypeOrder(info.deltaWatches, w -> w.request().getTypeUrl())) {
      DeltaWatch watch = entry.getValue();
      GoResponses.Delta response = createDeltaResponse(snapshot, watch, false);
      if (response != null) {
        watch.responder().accept(response);
        info.deltaWatches.remove(entry.getKey());
      }
    }
  }

  /**
   * {@code createResponse} (HEAD, since go-control-plane#1356). Null means the watch is up to date.
   *
   * <ul>
   *   <li>ADS superset rule: a request that is not wildcard and does not name every resource the
   *       snapshot has of its type is refused; names the snapshot lacks are fine.
   *   <li>Request version differs from the snapshot's: every subscribed resource that exists
   *       (wildcard: all of them).
   *   <li>Version equal: only resources this stream was not yet returned; nothing new means no
   *       answer — except for full-state types (CDS, LDS), which answer with everything if a
   *       returned resource was deleted or unsubscribed as well.
   * </ul>
   */
  private static GoResponses.Sotw createResponse(GoSnapshot snapshot, SotwWatch watch)
      throws MissingRequestResource {
    String typeUrl = watch.typeUrl();
    Map<String, GoResource> resources = snapshot.resources(typeUrl);
    GoSubscription.View subscription = watch.subscription();
    if (!subscription.wildcard()) {
      List<String> missing =
          resources.keySet().stream()
              .filter(name -> !subscription.subscribed().contains(name))
              .sorted()
              .toList();
      if (!missing.isEmpty()) {
        throw new MissingRequestResource(missing);
      }
    }
    String requestVersion = watch.request().getVersionInfo();
    String version = snapshot.version(typeUrl);
    Set<String> subscribed = new TreeSet<>(subscription.subscribed());
    Map<String, String> known = subscription.returned();

    Set<String> changed = new TreeSet<>();
    List<String> deleted = new ArrayList<>();
    if (version.equals(requestVersion)) {
      if (subscription.wildcard()) {
        resources.keySet().stream().filter(name -> !known.containsKey(name)).forEach(changed::add);
      }
      subscribed.stream()
          .filter(name -> resources.containsKey(name) && !known.containsKey(name))
          .forEach(changed::add);
      if (changed.isEmpty() && !watch.sendFullStateResponses()) {
        return null;
      }
      for (String name : new TreeSet<>(known.keySet())) {
        if (!resources.containsKey(name)) {
          deleted.add(name);
        } else if (!subscription.wildcard() && !subscribed.contains(name)) {
          deleted.add(name);
        }
      }
      if (changed.isEmpty() && deleted.isEmpty()) {
        return null;
      }
    }

    List<GoResource> toReturn = new ArrayList<>();
    Map<String, String> returned;
    if (!version.equals(requestVersion) || watch.sendFullStateResponses()) {
      returned = new HashMap<>();
      if (subscription.wildcard()) {
        for (GoResource resource : new TreeMap<>(resources).values()) {
          toReturn.add(resource);
          returned.put(resource.name(), version);
        }
      }
      // Appended after the wildcard's: a name both subscribed and covered by "*" goes out twice, as
      // in go.
      for (String name : subscribed) {
        GoResource resource = resources.get(name);
        if (resource != null) {
          toReturn.add(resource);
          returned.put(name, version);
        }
      }
    } else {
      returned = new HashMap<>(known);
      for (String name : changed) {
        toReturn.add(resources.get(name));
        returned.put(name, version);
      }
      deleted.forEach(returned::remove);
    }
    return new GoResponses.Sotw(
        watch.request(), version, List.copyOf(toReturn), Map.copyOf(returned));
  }

  /**
   * {@code CreateDeltaWatch}: with a snapshot, answered at once if anything differs from what the
   * subscription was returned — or even if nothing does, when the request is wildcard and carries
   * no nonce (the first of its type, which Envoy needs answered to finish initialising). Otherwise
   * a watch.
   */
  @Override
  public synchronized Runnable createDeltaWatch(
      DeltaDiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Delta> responder) {
    String group = request.getNode().getCluster();
    Status info = status.computeIfAbsent(group, g -> new Status());
    DeltaWatch watch = new DeltaWatch(request, subscription, responder);
    GoSnapshot snapshot = snapshots.get(group);
    if (snapshot != null) {
      GoResponses.Delta response =
          createDeltaResponse(
              snapshot, watch, subscription.wildcard() && request.getResponseNonce().isEmpty());
      if (response != null) {
        responder.accept(response);
        return () -> {};
      }
    }
    return track(group, info.deltaWatches, watch);
  }

  /**
   * {@code createDeltaResponse} (simple.go): per-resource versions are content hashes ({@code
   * ConstructVersionMap}). A resource is sent if its hash differs from what the subscription was
   * returned; a returned name is reported removed if the snapshot no longer has it or, not
   * wildcard, it is no longer subscribed. Names never returned are never reported removed.
   */
  private static GoResponses.Delta createDeltaResponse(
      GoSnapshot snapshot, DeltaWatch watch, boolean replyIfEmpty) {
    String typeUrl = watch.request().getTypeUrl();
    Map<String, GoResource> resources = snapshot.resources(typeUrl);
    GoSubscription.View subscription = watch.subscription();
    Map<String, String> returned = new HashMap<>(subscription.returned());
    List<GoResource> toReturn = new ArrayList<>();
    Consumer<GoResource> addIfChanged =
        resource -> {
          if (!resource.hash().equals(returned.get(resource.name()))) {
            toReturn.add(resource);
            returned.put(resource.name(), resource.hash());
          }
        };
    if (subscription.wildcard()) {
      new TreeMap<>(resources).values().forEach(addIfChanged);
    }
    new TreeSet<>(subscription.subscribed())
        .stream().map(resources::get).filter(r -> r != null).forEach(addIfChanged);
    List<String> removed = new ArrayList<>();
    for (String name : new TreeSet<>(returned.keySet())) {
      if (!resources.containsKey(name)
          || (!subscription.wildcard() && !subscription.subscribed().contains(name))) {
        removed.add(name);
        returned.remove(name);
      }
    }
    if (toReturn.isEmpty() && removed.isEmpty() && !replyIfEmpty) {
      return null;
    }
    return new GoResponses.Delta(
        watch.request(),
        snapshot.version(typeUrl),
        List.copyOf(toReturn),
        List.copyOf(removed),
        Map.copyOf(returned));
  }

  private <W> Runnable track(String group, Map<Long, W> watches, W watch) {
    long id = ++watchCount;
    watches.put(id, watch);
    return () -> cancel(group, id);
  }

  /** {@code cancelWatch} and {@code cancelDeltaWatch}. */
  private synchronized void cancel(String group, long id) {
    Status info = status.get(group);
    if (info != null) {
      info.watches.remove(id);
      info.deltaWatches.remove(id);
    }
  }

  /**
   * {@code orderResponseWatches} sorted by {@code keys.Less}: the type's ResponseType, then (here)
   * creation.
   */
  private static <W> List<Map.Entry<Long, W>> inResponseTypeOrder(
      Map<Long, W> watches, Function<W, String> typeUrl) {
    return watches.entrySet().stream()
        .map(e -> Map.entry(e.getKey(), e.getValue()))
        .sorted(
            Comparator.comparingInt(
                    (Map.Entry<Long, W> e) -> GoSnapshot.responseType(typeUrl.apply(e.getValue())))
                .thenComparing(Map.Entry::getKey))
        .toList();
  }
}
