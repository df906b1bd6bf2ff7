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
 * go-control-plane v0.13.4's {@code snapshotCache} in ADS mode (pkg/cache/v3/simple.go and delta.go
 * at tag v0.13.4), before HEAD's subscriptions: a SotW watch sees only the request and the names
 * the client was last answered for ({@code knownResourceNames}); a Delta watch sees the {@link
 * GoStreamStateV013}. Grouping by {@code node.cluster}; the lock is go's {@code cache.mu}.
 * Resources go out sorted by name, watches of a type are answered in creation order (go: map
 * order).
 */
final class GoSnapshotCacheV013 {

  private record SotwWatch(DiscoveryRequest request, Consumer<GoResponses.Sotw> responder) {}

  private record DeltaWatch(
      DeltaDiscoveryRequest request,
      GoStreamStateV013.View state,
      Consumer<GoResponses.Delta> responder) {}

  private static final class Status {
    private final Map<Long, SotwWatch> watches = new LinkedHashMap<>();
    private final Map<Long, DeltaWatch> deltaWatches = new LinkedHashMap<>();
  }

  private final Map<String, GoSnapshot> snapshots = new HashMap<>();
  private final Map<String, Status> status = new HashMap<>();
  private long watchCount;

  /**
   * {@code CreateWatch} (v0.13.4), the rule of go-control-plane#583. With a snapshot, a requested
   * name that is not in {@code known} and exists in the snapshot is answered at once; failing that,
   * a request whose version differs is answered at once; otherwise (same version, or no snapshot) a
   * watch is kept. "Answered" goes through {@link #respond}, whose superset rule may send nothing —
   * and then the request keeps no watch either. So a name re-subscribed from the last answer, at an
   * unchanged version, gets nothing.
   */
  synchronized Runnable createWatch(
      DiscoveryRequest request, Set<String> known, Consumer<GoResponses.Sotw> responder) {
    String group = request.getNode().getCluster();
    Status info = status.computeIfAbsent(group, g -> new Status());
    GoSnapshot snapshot = snapshots.get(group);
    String typeUrl = request.getTypeUrl();
    if (snapshot != null) {
      Map<String, GoResource> resources = snapshot.resources(typeUrl);
      boolean newNameExists =
          request.getResourceNamesList().stream()
              .anyMatch(name -> !known.contains(name) && resources.containsKey(name));
      if (newNameExists) {
        respond(request, responder, snapshot);
        return () -> {};
      }
    }
    if (snapshot == null || request.getVersionInfo().equals(snapshot.version(typeUrl))) {
      return track(group, info.watches, new SotwWatch(request, responder));
    }
    respond(request, responder, snapshot);
    return () -> {};
  }

  /**
   * {@code SetSnapshot}, {@code respondSOTWWatches}, {@code respondDeltaWatches} (v0.13.4). A SotW
   * watch whose version differs is answered and discarded — also when the superset rule sent
   * nothing, unlike HEAD, which keeps that watch. Delta watches are answered if anything changed
   * for them, or, wildcard and never answered yet, even if empty.
   */
  synchronized void setSnapshot(String group, GoSnapshot snapshot) {
    snapshots.put(group, snapshot);
    Status info = status.get(group);
    if (info == null) {
      return;
    }
    for (Map.Entry<Long, SotwWatch> entry :
        inResponseTypeOrder(info.watches, w -> w.request().getTypeUrl())) {
      SotwWatch watch = entry.getValue();
      if (!snapshot
          .version(watch.request().getTypeUrl())
          .equals(watch.request().getVersionInfo())) {
        respond(watch.request(), watch.responder(), snapshot);
        info.watches.remove(entry.getKey());
      }
    }
    for (Map.Entry<Long, DeltaWatch> entry :
        inResponseTypeOrder(info.deltaWatches, w -> w.request().getTypeUrl())) {
      DeltaWatch watch = entry.getValue();
      if (respondDelta(snapshot, watch.request(), watch.state(), watch.responder())) {
        info.deltaWatches.remove(entry.getKey());
      }
    }
  }

  /**
   * {@code respond} and {@code createResponse} (v0.13.4): in ADS mode a request naming resources
   * must name every resource the snapshot has of the type ({@code superset}), or nothing is sent
   * ("ADS mode: not responding to request"). The answer carries the requested names that exist —
   * all resources if the request names none, at any point of the stream — at the snapshot's
   * version.
   */
  private static void respond(
      DiscoveryRequest request, Consumer<GoResponses.Sotw> responder, GoSnapshot snapshot) {
    Map<String, GoResource> resources = snapshot.resources(request.getTypeUrl());
    Set<String> names = Set.copyOf(request.getResourceNamesList());
    if (!names.isEmpty() && !names.containsAll(resources.keySet())) {
      return;
    }
    List<GoResource> filtered =
        new TreeMap<>(resources)
            .values().stream()
                .filter(resource -> names.isEmpty() || names.contains(resource.name()))
                .toList();
    responder.accept(
        new GoResponses.Sotw(request, snapshot.version(request.getTypeUrl()), filtered, Map.of()));
  }

  /**
   * {@code CreateDeltaWatch} (v0.13.4): answered at once when {@link #respondDelta} sends,
   * otherwise a watch.
   */
  synchronized Runnable createDeltaWatch(
      DeltaDiscoveryRequest request,
      GoStreamStateV013.View state,
      Consumer<GoResponses.Delta> responder) {
    String group = request.getNode().getCluster();
    Status info = status.computeIfAbsent(group, g -> new Status());
    GoSnapshot snapshot = snapshots.get(group);
    if (snapshot != null && respondDelta(snapshot, request, state, responder)) {
      return () -> {};
    }
    return track(group, info.deltaWatches, new DeltaWatch(request, state, responder));
  }

  /**
   * {@code respondDelta} and {@code createDeltaResponse} (delta.go, v0.13.4), true if it sent.
   * Wildcard: every resource whose hash differs from the known one, and every known name the
   * snapshot lacks as removed. Otherwise only subscribed names: sent if the hash differs, removed
   * if known and gone. Sent if anything is in it, or if the state is wildcard and first (Envoy
   * needs that answer to initialise).
   */
  private static boolean respondDelta(
      GoSnapshot snapshot,
      DeltaDiscoveryRequest request,
      GoStreamStateV013.View state,
      Consumer<GoResponses.Delta> responder) {
    String typeUrl = request.getTypeUrl();
    Map<String, GoResource> resources = snapshot.resources(typeUrl);
    Map<String, String> known = state.resourceVersions();
    Map<String, String> next = new HashMap<>();
    List<GoResource> filtered = new ArrayList<>();
    List<String> toRemove = new ArrayList<>();
    if (state.wildcard()) {
      for (GoResource resource : new TreeMap<>(resources).values()) {
        next.put(resource.name(), resource.hash());
        if (!resource.hash().equals(known.get(resource.name()))) {
          filtered.add(resource);
        }
      }
      new TreeSet<>(known.keySet())
          .stream().filter(name -> !resources.containsKey(name)).forEach(toRemove::add);
    } else {
      for (String name : new TreeSet<>(state.subscribed())) {
        GoResource resource = resources.get(name);
        if (resource != null) {
          if (!resource.hash().equals(known.getOrDefault(name, ""))) {
            filtered.add(resource);
          }
          next.put(name, resource.hash());
        } else if (known.containsKey(name)) {
          toRemove.add(name);
        }
      }
    }
    if (filtered.isEmpty() && toRemove.isEmpty() && !(state.wildcard() && state.first())) {
      return false;
    }
    responder.accept(
        new GoResponses.Delta(
            request,
            snapshot.version(typeUrl),
            List.copyOf(filtered),
            List.copyOf(toRemove),
            Map.copyOf(next)));
    return true;
  }

  private <W> Runnable track(String group, Map<Long, W> watches, W watch) {
    long id = ++watchCount;
    watches.put(id, watch);
    return () -> cancel(group, id);
  }

  private synchronized void cancel(String group, long id) {
    Status info = status.get(group);
    if (info != null) {
      info.watches.remove(id);
      info.deltaWatches.remove(id);
    }
  }

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
