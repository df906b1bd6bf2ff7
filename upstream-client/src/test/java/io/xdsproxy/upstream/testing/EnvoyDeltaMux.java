package io.xdsproxy.upstream.testing;

import com.google.protobuf.Message;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.TypeUrl;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The model of Envoy's Delta ADS mux, {@code NewGrpcMuxImpl}
 * (source/extensions/config_subscription/grpc/new_grpc_mux_impl.cc), with its per-type {@link
 * EnvoyDeltaSubscriptionState} and {@link WatchMap}, and the {@code PausableAckQueue}: each
 * response's ACK waits in a queue while its type is paused, ACKs go before plain subscription
 * changes, and those go in the order the types were first subscribed. Confined to the client's main
 * thread.
 */
final class EnvoyDeltaMux implements EnvoyMux {

  private final Node node;
  private final EnvoySotwMux.EdsCache edsCache;
  private final Consumer<String> log;
  private final Map<String, Subscription> subscriptions = new HashMap<>();

  /** {@code subscription_ordering_}. */
  private final List<String> subscriptionOrdering = new ArrayList<>();

  /** {@code PausableAckQueue::storage_}. */
  private final List<EnvoyDeltaSubscriptionState.UpdateAck> ackQueue = new ArrayList<>();

  private final Map<String, Integer> pauses = new HashMap<>();
  private Consumer<Message> stream;

  EnvoyDeltaMux(Node node, EnvoySotwMux.EdsCache edsCache, Consumer<String> log) {
    this.node = node;
    this.edsCache = edsCache;
    this.log = log;
  }

  /** {@code NewGrpcMuxImpl::SubscriptionStuff}. */
  private record Subscription(WatchMap watchMap, EnvoyDeltaSubscriptionState state) {}

  private final class DeltaWatch implements Watch {
    final TypeUrl type;
    final SubscriptionCallbacks callbacks;
    Set<String> names = Set.of();
    boolean removed;

    DeltaWatch(TypeUrl type, SubscriptionCallbacks callbacks) {
      this.type = type;
      this.callbacks = callbacks;
    }

    /**
     * {@code NewGrpcMuxImpl::removeWatch}: interest updated to nothing, then the watch leaves the
     * map.
     */
    @Override
    public void remove() {
      if (removed) {
        return;
      }
      removed = true;
      updateWatch(type, this, Set.of());
      subscriptions.get(type.url()).watchMap().removeWatch(this);
    }
  }

  /**
   * {@code NewGrpcMuxImpl::addWatch}: the first watch of a type creates its subscription (its place
   * in the ordering); the names go through {@code updateWatch}, which sends a request only if some
   * name is new to the whole subscription.
   */
  @Override
  public Watch addWatch(TypeUrl type, Set<String> names, SubscriptionCallbacks callbacks) {
    Subscription subscription =
        subscriptions.computeIfAbsent(
            type.url(),
            url -> {
              subscriptionOrdering.add(url);
              WatchMap watchMap = new WatchMap();
              return new Subscription(
                  watchMap, new EnvoyDeltaSubscriptionState(type, node, watchMap));
            });
    DeltaWatch watch = new DeltaWatch(type, callbacks);
    subscription.watchMap().addWatch(watch);
    updateWatch(type, watch, names);
    return watch;
  }

  /**
   * {@code NewGrpcMuxImpl::updateWatch}: {@code WatchMap::updateWatchInterest} yields only names
   * new to the subscription and names no other watch wants; a second watch on a subscribed name
   * (the new cluster of a changed Cluster) therefore sends nothing (watch_map.cc {@code
   * findAdditions}).
   */
  private void updateWatch(TypeUrl type, DeltaWatch watch, Set<String> names) {
    Subscription subscription = subscriptions.get(type.url());
    WatchMap.AddedRemoved change = subscription.watchMap().updateWatchInterest(watch, names);
    if (edsCache != null && type.equals(TypeUrl.ENDPOINT)) {
      change.removed().forEach(edsCache::remove);
    }
    subscription.state().updateSubscriptionInterest(change.added(), change.removed());
    if (subscription.state().subscriptionUpdatePending()) {
      trySendDiscoveryRequests();
    }
  }

  /**
   * {@code NewGrpcMuxImpl::pause}: counted per type in the ack queue; the last resume tries to
   * send.
   */
  @Override
  public Resume pause(TypeUrl... types) {
    for (TypeUrl type : types) {
      pauses.merge(type.url(), 1, Integer::sum);
    }
    boolean[] resumed = {false};
    return () -> {
      if (resumed[0]) {
        return;
      }
      resumed[0] = true;
      for (TypeUrl type : types) {
        pauses.merge(type.url(), -1, Integer::sum);
        if (!paused(type.url())) {
          trySendDiscoveryRequests();
        }
      }
    };
  }

  private boolean paused(String typeUrl) {
    return pauses.getOrDefault(typeUrl, 0) > 0;
  }

  /**
   * {@code NewGrpcMuxImpl::onStreamEstablished}: every subscription is marked fresh (its next
   * request re-subscribes everything, with {@code initial_resource_versions}) and ACKs still queued
   * for the old stream are dropped (envoy#15767).
   */
  @Override
  public void onStreamEstablished(Consumer<Message> sender) {
    stream = sender;
    subscriptions.values().forEach(subscription -> subscription.state().markStreamFresh(true));
    ackQueue.clear();
    trySendDiscoveryRequests();
  }

  @Override
  public void onStreamClosed() {
    stream = null;
  }

  /**
   * {@code NewGrpcMuxImpl::onDiscoveryResponse}: a type with no subscription is dropped without an
   * ACK; otherwise the subscription state handles it and its ACK (or NACK) joins the queue.
   */
  @Override
  public void onResponse(Message message) {
    DeltaDiscoveryResponse response = (DeltaDiscoveryResponse) message;
    Subscription subscription = subscriptions.get(response.getTypeUrl());
    if (subscription == null) {
      log.accept(
          "Dropping received DeltaDiscoveryResponse for non-existent subscription "
              + response.getTypeUrl());
      return;
    }
    ackQueue.add(subscription.state().handleResponse(response));
    trySendDiscoveryRequests();
  }

  /** {@code trySendDiscoveryRequests} and {@code whoWantsToSendDiscoveryRequest}. */
  private void trySendDiscoveryRequests() {
    while (stream != null) {
      EnvoyDeltaSubscriptionState.UpdateAck ack =
          ackQueue.stream().filter(queued -> !paused(queued.typeUrl())).findFirst().orElse(null);
      String typeUrl =
          ack != null
              ? ack.typeUrl()
              : subscriptionOrdering.stream()
                  .filter(
                      url ->
                          subscriptions.get(url).state().subscriptionUpdatePending()
                              && !paused(url))
                  .findFirst()
                  .orElse(null);
      if (typeUrl == null) {
        return;
      }
      EnvoyDeltaSubscriptionState state = subscriptions.get(typeUrl).state();
      DeltaDiscoveryRequest request;
      if (ack != null) {
        ackQueue.remove(ack);
        request = state.getNextRequestWithAck(ack);
      } else {
        request = state.getNextRequestAckless();
      }
      stream.accept(request);
    }
  }

  /**
   * The model of {@code WatchMap} (source/extensions/config_subscription/grpc/watch_map.cc): which
   * watches want which names, which are wildcard watches, and delivery of a Delta update to each
   * interested watch. A watch removed while an update is being delivered is skipped and removed
   * after.
   */
  final class WatchMap {
    private final Set<DeltaWatch> watches = new LinkedHashSet<>();
    private final Set<DeltaWatch> wildcardWatches = new LinkedHashSet<>();
    private final Map<String, Set<DeltaWatch>> watchInterest = new HashMap<>();
    private Set<DeltaWatch> deferredRemovals;

    record AddedRemoved(Set<String> added, Set<String> removed) {}

    void addWatch(DeltaWatch watch) {
      watches.add(watch);
      wildcardWatches.add(watch);
    }

    void removeWatch(DeltaWatch watch) {
      if (deferredRemovals != null) {
        deferredRemovals.add(watch);
      } else {
        wildcardWatches.remove(watch);
        watches.remove(watch);
      }
    }

    /** {@code updateWatchInterest}, with {@code findAdditions} and {@code findRemovals}. */
    AddedRemoved updateWatchInterest(DeltaWatch watch, Set<String> names) {
      if (names.isEmpty() || names.contains(EnvoyDeltaSubscriptionState.WILDCARD)) {
        wildcardWatches.add(watch);
      } else {
        wildcardWatches.remove(watch);
      }
      Set<String> newlyAdded = new HashSet<>(names);
      newlyAdded.removeAll(watch.names);
      Set<String> newlyRemoved = new HashSet<>(watch.names);
      newlyRemoved.removeAll(names);
      watch.names = Set.copyOf(names);
      Set<String> added = new HashSet<>();
      for (String name : newlyAdded) {
        if (watchInterest.computeIfAbsent(name, n -> new LinkedHashSet<>()).size() == 0) {
          added.add(name);
        }
        watchInterest.get(name).add(watch);
      }
      Set<String> removed = new HashSet<>();
      for (String name : newlyRemoved) {
        Set<DeltaWatch> interested = watchInterest.get(name);
        interested.remove(watch);
        if (interested.isEmpty()) {
          watchInterest.remove(name);
          removed.add(name);
        }
      }
      return new AddedRemoved(added, removed);
    }

    private Set<DeltaWatch> watchesInterestedIn(String name) {
      Set<DeltaWatch> interested = new LinkedHashSet<>(wildcardWatches);
      interested.addAll(watchInterest.getOrDefault(name, Set.of()));
      return interested;
    }

    /**
     * {@code WatchMap::onConfigUpdate} (Delta): each interested watch gets its added resources and
     * removals; a resource no watch wants is not even decoded; an update with neither goes to the
     * wildcard watches.
     */
    void onConfigUpdate(
        TypeUrl type, List<Resource> added, List<String> removed, String systemVersionInfo) {
      deferredRemovals = new HashSet<>();
      try {
        Map<DeltaWatch, List<DecodedResource>> perWatchAdded = new LinkedHashMap<>();
        for (Resource resource : added) {
          Set<DeltaWatch> interested = watchesInterestedIn(resource.getName());
          if (interested.isEmpty()) {
            continue;
          }
          DecodedResource decoded =
              DecodedResource.fromDelta(type, resource, resource.getVersion());
          interested.forEach(
              watch -> perWatchAdded.computeIfAbsent(watch, w -> new ArrayList<>()).add(decoded));
          if (edsCache != null && type.equals(TypeUrl.ENDPOINT) && decoded.resource() != null) {
            edsCache.put(decoded.name(), (ClusterLoadAssignment) decoded.resource());
          }
        }
        Map<DeltaWatch, List<String>> perWatchRemoved = new LinkedHashMap<>();
        for (String name : removed) {
          watchesInterestedIn(name)
              .forEach(
                  watch ->
                      perWatchRemoved.computeIfAbsent(watch, w -> new ArrayList<>()).add(name));
        }
        for (Map.Entry<DeltaWatch, List<DecodedResource>> entry : perWatchAdded.entrySet()) {
          if (!deferredRemovals.contains(entry.getKey())) {
            List<String> removedForWatch = perWatchRemoved.remove(entry.getKey());
            entry
                .getKey()
                .callbacks
                .onConfigUpdate(
                    entry.getValue(),
                    removedForWatch == null ? List.of() : removedForWatch,
                    systemVersionInfo);
          }
        }
        for (Map.Entry<DeltaWatch, List<String>> entry : perWatchRemoved.entrySet()) {
          if (!deferredRemovals.contains(entry.getKey())) {
            entry.getKey().callbacks.onConfigUpdate(List.of(), entry.getValue(), systemVersionInfo);
          }
        }
        if (added.isEmpty() && removed.isEmpty()) {
          for (DeltaWatch watch : List.copyOf(wildcardWatches)) {
            if (!deferredRemovals.contains(watch)) {
              watch.callbacks.onConfigUpdate(List.of(), List.of(), systemVersionInfo);
            }
          }
        }
      } finally {
        Set<DeltaWatch> removals = deferredRemovals;
        deferredRemovals = null;
        removals.forEach(this::removeWatch);
      }
    }

    /** {@code WatchMap::onConfigUpdateFailed}: every watch of the type hears of it. */
    void onConfigUpdateFailed(FailureReason reason) {
      for (DeltaWatch watch : List.copyOf(watches)) {
        if (!watch.removed) {
          watch.callbacks.onConfigUpdateFailed(reason);
        }
      }
    }
  }
}
