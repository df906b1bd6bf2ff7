package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.Status;
import io.grpc.StatusException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * go-control-plane HEAD's {@code LinearCache} (pkg/cache/v3/linear.go): the resources of one type,
 * each with the cache version of its last update ({@code cachedResource.cacheVersion}, what SotW
 * compares) and its content hash (what Delta compares); the cache version is {@code versionPrefix}
 * and a counter bumped by every update. Its lock is go's {@code cache.mu}.
 *
 * <p>Go ranges over maps in random order; the model sends resources sorted by name and answers
 * watches in creation order, one of the orders go may take.
 */
final class GoLinearCache {

  /** A resource and the cache version it was last updated at. */
  private record Cached(GoResource resource, String cacheVersion) {

    /**
     * {@code cachedResource.getVersion}: Delta watches use the content hash, SotW the cache
     * version.
     */
    String version(boolean useResourceVersion) {
      return useResourceVersion ? resource.hash() : cacheVersion;
    }
  }

  /**
   * The {@code watch} interface of linear.go, implemented by {@code ResponseWatch} and {@code
   * DeltaResponseWatch}.
   */
  private interface Watch {
    GoSubscription.View subscription();

    boolean isDelta();

    boolean sendFullStateResponses();

    void respond(
        List<GoResource> resources,
        List<String> removed,
        Map<String, String> returned,
        String version);
  }

  private record SotwWatch(
      DiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Sotw> responder)
      implements Watch {

    @Override
    public boolean isDelta() {
      return false;
    }

    @Override
    public boolean sendFullStateResponses() {
      return GoSnapshot.requiresFullStateInSotw(request.getTypeUrl());
    }

    @Override
    public void respond(
        List<GoResource> resources,
        List<String> removed,
        Map<String, String> returned,
        String version) {
      responder.accept(new GoResponses.Sotw(request, version, resources, returned));
    }
  }

  private record DeltaWatch(
      DeltaDiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Delta> responder)
      implements Watch {

    @Override
    public boolean isDelta() {
      return true;
    }

    @Override
    public boolean sendFullStateResponses() {
      return false;
    }

    @Override
    public void respond(
        List<GoResource> resources,
        List<String> removed,
        Map<String, String> returned,
        String version) {
      responder.accept(new GoResponses.Delta(request, version, resources, removed, returned));
    }
  }

  private final String typeUrl;
  private final String versionPrefix;
  private final Map<String, Cached> resources = new HashMap<>();

  /** Watches naming a resource, by name then watch id; never wildcard ones. */
  private final Map<String, Map<Long, Watch>> resourceWatches = new HashMap<>();

  private final Map<String, Map<Long, Watch>> prefixWatches = new HashMap<>();
  private final Map<Long, Watch> wildcardWatches = new LinkedHashMap<>();
  private long currentWatchId;
  private long version;

  /** {@code NewLinearCache(typeURL, WithVersionPrefix(versionPrefix))}. */
  GoLinearCache(String typeUrl, String versionPrefix) {
    this.typeUrl = typeUrl;
    this.versionPrefix = versionPrefix;
  }

  /** {@code getVersion}. */
  private String currentVersion() {
    return versionPrefix + version;
  }

  synchronized Map<String, GoResource> resources() {
    Map<String, GoResource> out = new HashMap<>();
    resources.forEach((name, cached) -> out.put(name, cached.resource()));
    return out;
  }

  /**
   * {@code UpdateResources}: one version bump for the whole batch, every updated resource stamped
   * with it, then {@code notifyAll} for the names touched.
   */
  synchronized void updateResources(Map<String, GoResource> toUpdate, Collection<String> toDelete) {
    version++;
    String stamped = currentVersion();
    List<String> modified = new ArrayList<>();
    new TreeMap<>(toUpdate)
        .forEach(
            (name, resource) -> {
              resources.put(name, new Cached(resource, stamped));
              modified.add(name);
            });
    for (String name : toDelete) {
      resources.remove(name);
      modified.add(name);
    }
    notifyAll(modified);
  }

  /**
   * {@code notifyAll}: the watches naming (or prefix-matching) a modified resource, then every
   * wildcard watch, are answered if {@link #computeResponse} finds a change for them; an answered
   * watch is gone.
   */
  private void notifyAll(List<String> modified) {
    Map<Long, Watch> triggered = new TreeMap<>();
    for (String name : modified) {
      triggered.putAll(resourceWatches.getOrDefault(name, Map.of()));
      prefixWatches.forEach(
          (prefix, watches) -> {
            if (name.startsWith(prefix)) {
              triggered.putAll(watches);
            }
          });
    }
    triggered.forEach(
        (id, watch) -> {
          if (computeResponse(watch, false)) {
            removeWatch(id, watch.subscription());
          }
        });
    for (Map.Entry<Long, Watch> entry : List.copyOf(wildcardWatches.entrySet())) {
      if (computeResponse(entry.getValue(), false)) {
        wildcardWatches.remove(entry.getKey());
      }
    }
  }

  /**
   * {@code CreateWatch} (SotW). The request's version only decides {@code replyEvenIfEmpty}: true
   * when it is empty or lacks this cache's prefix (the client may know nothing); otherwise changes
   * are computed against what this stream was returned, whatever version it sends — so a NACK,
   * which carries the last ACKed version, finds nothing to resend.
   */
  synchronized Runnable createWatch(
      DiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Sotw> responder)
      throws StatusException {
    checkType(request.getTypeUrl());
    String requestVersion = request.getVersionInfo();
    boolean replyEvenIfEmpty =
        requestVersion.isEmpty() || !requestVersion.startsWith(versionPrefix);
    SotwWatch watch = new SotwWatch(request, subscription, responder);
    if (computeResponse(watch, replyEvenIfEmpty)) {
      return () -> {};
    }
    return trackWatch(watch);
  }

  /**
   * {@code CreateDeltaWatch}: answered at once if anything changed, or even if nothing did when the
   * subscription is wildcard and the request has no nonce ("On first request on a wildcard
   * subscription, envoy does expect a response to come in to conclude initialization").
   */
  synchronized Runnable createDeltaWatch(
      DeltaDiscoveryRequest request,
      GoSubscription.View subscription,
      Consumer<GoResponses.Delta> responder)
      throws StatusException {
    checkType(request.getTypeUrl());
    DeltaWatch watch = new DeltaWatch(request, subscription, responder);
    if (computeResponse(watch, subscription.wildcard() && request.getResponseNonce().isEmpty())) {
      return () -> {};
    }
    return trackWatch(watch);
  }

  private void checkType(String requested) throws StatusException {
    if (!requested.equals(typeUrl)) {
      throw Status.UNKNOWN
          .withDescription("request type " + requested + " does not match cache type " + typeUrl)
          .asException();
    }
  }

  /**
   * {@code computeResourceChange}: resources that are new to the subscription or whose version
   * differs from what it was returned (wildcard: all of the cache; otherwise the subscribed names
   * and prefixes), and returned names now deleted from the cache or, not wildcard, no longer
   * subscribed.
   */
  private List<List<String>> computeResourceChange(
      GoSubscription.View subscription, boolean useResourceVersion) {
    List<String> changed = new ArrayList<>();
    List<String> removed = new ArrayList<>();
    Map<String, String> known = subscription.returned();
    TreeMap<String, Cached> sorted = new TreeMap<>(resources);
    if (subscription.wildcard()) {
      sorted.forEach(
          (name, cached) -> {
            String knownVersion = known.get(name);
            if (knownVersion == null || !knownVersion.equals(cached.version(useResourceVersion))) {
              changed.add(name);
            }
          });
      new TreeSet<>(known.keySet())
          .stream().filter(name -> !resources.containsKey(name)).forEach(removed::add);
    } else {
      for (String name : new TreeSet<>(subscription.subscribed())) {
        Cached cached = resources.get(name);
        if (cached == null) {
          continue;
        }
        String knownVersion = known.get(name);
        if (knownVersion == null || !knownVersion.equals(cached.version(useResourceVersion))) {
          changed.add(name);
        }
      }
      if (!subscription.prefixes().isEmpty()) {
        sorted.forEach(
            (name, cached) -> {
              if (subscription.subscribed().contains(name)
                  || subscription.prefixes().stream().noneMatch(name::startsWith)) {
                return;
              }
              String knownVersion = known.get(name);
              if (knownVersion == null
                  || !knownVersion.equals(cached.version(useResourceVersion))) {
                changed.add(name);
              }
            });
      }
      for (String name : new TreeSet<>(known.keySet())) {
        if (!resources.containsKey(name) || !subscription.isSubscribedTo(name)) {
          removed.add(name);
        }
      }
    }
    return List.of(changed, removed);
  }

  /**
   * {@code computeResponse}, answering the watch if there is a response; true if it answered.
   * Nothing changed and nothing removed means no answer unless {@code replyEvenIfEmpty}. What is
   * sent:
   *
   * <ul>
   *   <li>Delta, and SotW types that are not full-state: only the changed resources. A SotW answer
   *       is skipped if none changed and it need not reply (SotW cannot say "removed"); with {@code
   *       replyEvenIfEmpty} and no change it is an empty response, not a resend.
   *   <li>Full-state SotW types (CDS, LDS): every existing subscribed resource (wildcard: all).
   * </ul>
   *
   * What the subscription was returned, plus what is sent, minus what was removed, goes with the
   * response.
   */
  private boolean computeResponse(Watch watch, boolean replyEvenIfEmpty) {
    GoSubscription.View subscription = watch.subscription();
    List<List<String>> change = computeResourceChange(subscription, watch.isDelta());
    List<String> changed = change.get(0);
    List<String> removed = change.get(1);
    if (changed.isEmpty() && removed.isEmpty() && !replyEvenIfEmpty) {
      return false;
    }
    List<String> toReturn;
    if (!watch.sendFullStateResponses()) {
      if (!watch.isDelta() && !replyEvenIfEmpty && changed.isEmpty()) {
        return false;
      }
      toReturn = changed;
    } else if (subscription.wildcard()) {
      toReturn = List.copyOf(new TreeSet<>(resources.keySet()));
    } else {
      toReturn = new ArrayList<>();
      new TreeSet<>(subscription.subscribed())
          .stream().filter(resources::containsKey).forEach(toReturn::add);
      if (!subscription.prefixes().isEmpty()) {
        new TreeSet<>(resources.keySet())
            .stream()
                .filter(name -> !subscription.subscribed().contains(name))
                .filter(name -> subscription.prefixes().stream().anyMatch(name::startsWith))
                .forEach(toReturn::add);
      }
    }
    Map<String, String> returned = new HashMap<>(subscription.returned());
    List<GoResource> sent = new ArrayList<>();
    for (String name : toReturn) {
      Cached cached = resources.get(name);
      sent.add(cached.resource());
      returned.put(name, cached.version(watch.isDelta()));
    }
    removed.forEach(returned::remove);
    watch.respond(List.copyOf(sent), List.copyOf(removed), Map.copyOf(returned), currentVersion());
    return true;
  }

  /**
   * {@code trackWatch}: wildcard watches apart, the others under each name and prefix they
   * subscribe.
   */
  private Runnable trackWatch(Watch watch) {
    long id = ++currentWatchId;
    GoSubscription.View subscription = watch.subscription();
    if (subscription.wildcard()) {
      wildcardWatches.put(id, watch);
      return () -> {
        synchronized (this) {
          wildcardWatches.remove(id);
        }
      };
    }
    subscription
        .subscribed()
        .forEach(
            name ->
                resourceWatches.computeIfAbsent(name, n -> new LinkedHashMap<>()).put(id, watch));
    subscription
        .prefixes()
        .forEach(
            prefix ->
                prefixWatches.computeIfAbsent(prefix, p -> new LinkedHashMap<>()).put(id, watch));
    return () -> {
      synchronized (this) {
        removeWatch(id, subscription);
      }
    };
  }

  private void removeWatch(long id, GoSubscription.View subscription) {
    for (String name : subscription.subscribed()) {
      Map<Long, Watch> watches = resourceWatches.get(name);
      if (watches != null) {
        watches.remove(id);
        if (watches.isEmpty()) {
          resourceWatches.remove(name);
        }
      }
    }
    for (String prefix : subscription.prefixes()) {
      Map<Long, Watch> watches = prefixWatches.get(prefix);
      if (watches != null) {
        watches.remove(id);
        if (watches.isEmpty()) {
          prefixWatches.remove(prefix);
        }
      }
    }
  }
}
