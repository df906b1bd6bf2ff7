package io.xdsproxy.upstream.grpc;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.ResourceDecoder.InvalidResourceException;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource.UpstreamListener;
import io.xdsproxy.core.XdsResource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * One node group's incremental (Delta) ADS session with the control plane: a single {@code
 * DeltaAggregatedResources} stream that subscribes and unsubscribes names as the group's interest
 * changes, tells the upstream on reconnect which versions it holds ({@code
 * initial_resource_versions}, "Incremental reconnect"), and carries the upstream's per-resource
 * versions into the store, so Delta clients downstream see the upstream's own versions.
 */
final class DeltaUpstreamSession
    extends AdsSession<
        DeltaDiscoveryRequest,
        DeltaDiscoveryResponse,
        DeltaUpstreamSession.DeltaSubscriptionState> {

  /** One type's logical stream within the Delta ADS stream. */
  static final class DeltaSubscriptionState extends SubscriptionState {
    /** Name to version of every resource held, for initial_resource_versions on reconnect. */
    final Map<String, String> held = new HashMap<>();

    // What the upstream was told on this stream:
    boolean requestedOnStream;
    boolean wildcardOnStream;
    final Set<String> namesOnStream = new HashSet<>();

    DeltaSubscriptionState(TypeUrl type) {
      super(type);
    }
  }

  DeltaUpstreamSession(
      NodeGroupKey group,
      Node node,
      String tenant,
      UpstreamListener listener,
      SessionContext context) {
    super(group, node, tenant, listener, context, AdsCall.DELTA);
  }

  @Override
  DeltaSubscriptionState newTypeState(TypeUrl type) {
    return new DeltaSubscriptionState(type);
  }

  @Override
  void streamOpened(Iterable<DeltaSubscriptionState> types) {
    for (DeltaSubscriptionState state : types) {
      // initial_resource_versions names only what the new stream subscribes to and was sent: what
      // left the wire went from the store (forgetWhatLeftTheWire), and a name the group no longer
      // asks for would make the first request larger than what the group asks for.
      state.held.keySet().retainAll(state.received);
      state.requestedOnStream = false;
      state.wildcardOnStream = false;
      state.namesOnStream.clear();
      subscriptionChanged(state);
    }
  }

  /**
   * A wildcard is not taken back on a stream: istiod decides it once, on the type's first request
   * ({@code deltaWatchedResources}), and java-control-plane takes Listener and Cluster for wildcard
   * whatever is sent ({@code DeltaDiscoveryRequestStreamObserver}). Nor are the last names of a
   * type, nor Listener and Cluster names: go-control-plane up to v0.13.4 does not send again a name
   * unsubscribed and subscribed again while its version is unchanged, java-control-plane a Listener
   * or Cluster, so a client coming back for one would be told it does not exist. They stay asked
   * for, and in the store, until the stream ends (Listeners and Clusters asked by name are few: a
   * gRPC group's). Other names are taken back as the group drops them.
   */
  @Override
  Interest expressible(TypeUrl type, Interest interest, Interest wire) {
    if (wire.wildcard() && !interest.wildcard()) {
      return new Interest(true, interest.names());
    }
    if (!interest.wildcard() && interest.names().isEmpty()) {
      return wire;
    }
    if (type.isFullStateInSotw() && !interest.names().containsAll(wire.names())) {
      Set<String> names = new HashSet<>(wire.names());
      names.addAll(interest.names());
      return new Interest(interest.wildcard(), names);
    }
    return interest;
  }

  @Override
  void wireChanged(DeltaSubscriptionState state, Interest previous) {
    state.held.keySet().retainAll(state.received);
    subscriptionChanged(state);
  }

  /**
   * Tells the upstream how {@link SubscriptionState#wire} differs from what the stream is
   * subscribed to. The first request of a type subscribes to a wildcard the legacy way (no names),
   * which every control plane understands, and carries the versions held from earlier streams.
   */
  private void subscriptionChanged(DeltaSubscriptionState state) {
    if (!isStreamOpen()) {
      return;
    }
    Interest wire = state.wire;
    List<String> subscribe = new ArrayList<>(new TreeSet<>(wire.names()));
    subscribe.removeAll(state.namesOnStream);
    List<String> unsubscribe = new ArrayList<>(new TreeSet<>(state.namesOnStream));
    unsubscribe.removeAll(wire.names());
    boolean legacyWildcard = !state.requestedOnStream && wire.wildcard() && subscribe.isEmpty();
    // A wildcard is never taken back on a stream (expressible), so it is only ever subscribed to.
    if (wire.wildcard() && !state.wildcardOnStream && !legacyWildcard) {
      subscribe.add(0, Subscription.WILDCARD);
    }
    if (subscribe.isEmpty() && unsubscribe.isEmpty() && !legacyWildcard) {
      return;
    }
    DeltaDiscoveryRequest.Builder request =
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(state.type.url())
            .addAllResourceNamesSubscribe(subscribe)
            .addAllResourceNamesUnsubscribe(unsubscribe);
    if (!state.requestedOnStream) {
      request.putAllInitialResourceVersions(state.held);
      // A copy the group waits for must come again, unchanged or not.
      state.awaitingFresh.forEach(request::removeInitialResourceVersions);
    }
    // As on SotW sessions: some control planes read the node from every request.
    request.setNode(node);
    state.requestedOnStream = true;
    state.wildcardOnStream = wire.wildcard();
    state.namesOnStream.clear();
    state.namesOnStream.addAll(wire.names());
    send(request.build());
  }

  /**
   * Rule 14: a name is sent again when it is unsubscribed and subscribed again, in two requests.
   * Subscribing alone to a name already subscribed changes nothing to istiod and go-control-plane
   * ({@code shouldRespondDelta}, {@code UpdateResourceSubscriptions}), and one request doing both
   * leaves them unsubscribed. A name the wildcard covers is named in both: go-control-plane resends
   * a wildcard's name unsubscribed, istiod answers a subscription that changed with everything.
   */
  @Override
  void askAgain(DeltaSubscriptionState state) {
    if (!state.requestedOnStream) {
      return;
    }
    List<String> names = List.copyOf(new TreeSet<>(state.awaitingFresh));
    send(
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(state.type.url())
            .addAllResourceNamesUnsubscribe(names)
            .setNode(node)
            .build());
    send(
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(state.type.url())
            .addAllResourceNamesSubscribe(names)
            .setNode(node)
            .build());
  }

  @Override
  void onResponse(DeltaDiscoveryResponse response) {
    Optional<DeltaSubscriptionState> found = stateOfResponse(response.getTypeUrl());
    if (found.isEmpty()) {
      return;
    }
    DeltaSubscriptionState state = found.get();
    List<XdsResource> resources = new ArrayList<>();
    Set<String> heartbeats = new HashSet<>();
    Set<String> names = new HashSet<>();
    try {
      for (int i = 0; i < response.getResourcesCount(); i++) {
        Resource wrapper = response.getResources(i);
        if (!wrapper.hasResource()) {
          // A heartbeat ("TTL"): not a change of the resource, a refresh of its TTL.
          heartbeats.add(wrapper.getName());
          continue;
        }
        XdsResource resource = ResourceDecoder.decodeWrapped(state.type, i, wrapper);
        if (!names.add(resource.name())) {
          throw new InvalidResourceException(
              "resource #" + i + ": name '" + resource.name() + "' appears twice in one response");
        }
        resources.add(resource);
      }
    } catch (InvalidResourceException e) {
      com.google.rpc.Status detail =
          rejection(state.type, "response " + response.getNonce(), e.getMessage());
      logNack(state.type, detail);
      send(
          DeltaDiscoveryRequest.newBuilder()
              .setTypeUrl(state.type.url())
              .setResponseNonce(response.getNonce())
              .setErrorDetail(detail)
              .setNode(node)
              .build());
      return;
    }
    healthy();
    Set<String> removed = new HashSet<>(response.getRemovedResourcesList());
    // What the upstream removes of a name the proxy unsubscribed only to ask for it again answers
    // the unsubscription, and says nothing of whether the resource exists.
    removed.removeAll(state.awaitingFresh);
    for (XdsResource resource : resources) {
      state.held.put(resource.name(), resource.version());
    }
    state.held.keySet().removeAll(removed);
    send(
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(state.type.url())
            .setResponseNonce(response.getNonce())
            .setNode(node)
            .build());
    // A wildcard answer names every resource the upstream has and removes the rest, so from then on
    // a name the store lacks does not exist.
    publish(
        state,
        ResourceUpdate.partial(state.type, resources, removed, state.wildcardOnStream)
            .withHeartbeats(heartbeats));
  }
}
