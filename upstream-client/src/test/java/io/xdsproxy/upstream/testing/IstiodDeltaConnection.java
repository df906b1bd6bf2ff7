package io.xdsproxy.upstream.testing;

import static io.xdsproxy.upstream.testing.IstiodConfig.CLUSTER_TYPE;
import static io.xdsproxy.upstream.testing.IstiodConfig.ENDPOINT_TYPE;
import static io.xdsproxy.upstream.testing.IstiodConfig.isWildcardTypeUrl;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.upstream.testing.IstiodConfig.Build;
import io.xdsproxy.upstream.testing.IstiodConfig.Generated;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * A Delta ADS stream to {@link IstiodModel}: pilot/pkg/xds/delta.go {@code processDeltaRequest},
 * {@code shouldRespondDelta}, {@code deltaWatchedResources}, {@code pushDeltaXds} and {@code
 * forceEDSPush}.
 */
final class IstiodDeltaConnection
    extends IstiodConnection<DeltaDiscoveryRequest, DeltaDiscoveryResponse> {

  private static final String WILDCARD = "*";

  /**
   * What {@code deltaWatchedResources} returns: the names, whether they are a wildcard, whether
   * they changed.
   */
  private record Subscription(Set<String> names, boolean wildcard, boolean changed) {}

  IstiodDeltaConnection(
      IstiodModel model, long streamId, StreamObserver<DeltaDiscoveryResponse> responses) {
    super(model, streamId, responses);
  }

  @Override
  Node nodeOf(DeltaDiscoveryRequest request) {
    return request.hasNode() ? request.getNode() : null;
  }

  /**
   * delta.go {@code processDeltaRequest}. A request to answer is a forced push; when it subscribed
   * or unsubscribed anything (its ResourceDelta is not empty) only the names it subscribed (with
   * those of initial_resource_versions) are generated, otherwise the whole watch.
   * initial_resource_versions has no other use outside WDS. Any answered Cluster request is
   * followed by an EDS push of the whole EDS watch ({@code forceEDSPush}): "It is always the
   * server's responsibility to send EDS after CDS" (envoy#33607), since a Delta client may not ask.
   */
  @Override
  void process(DeltaDiscoveryRequest request) {
    if (!shouldRespondDelta(request)) {
      return;
    }
    String typeUrl = request.getTypeUrl();
    Set<String> subscribed = deltaWatchedResources(Set.of(), request).names();
    Set<String> unsubscribed = new HashSet<>(request.getResourceNamesUnsubscribeList());
    unsubscribed.remove(WILDCARD);
    Set<String> names =
        subscribed.isEmpty() && unsubscribed.isEmpty()
            ? watched.get(typeUrl).resourceNames
            : subscribed;
    push(typeUrl, names, Build.EVERYTHING, lastPushVersion);
    if (typeUrl.equals(CLUSTER_TYPE)) {
      forceEdsPush();
    }
  }

  private void forceEdsPush() {
    WatchedResource endpoints = watched.get(ENDPOINT_TYPE);
    if (endpoints != null) {
      push(ENDPOINT_TYPE, endpoints.resourceNames, Build.EVERYTHING, lastPushVersion);
    }
  }

  /**
   * delta.go {@code shouldRespondDelta}. A NACK: no response. The type's first request (INIT or
   * RECONNECT): the watch is made from it, wildcard decided once and for all, and answered. A
   * non-empty nonce that is not the last one sent: expired, no response. Otherwise the subscription
   * is updated and answered only if it changed: re-subscribing a name already there changes
   * nothing.
   *
   * <p>istiod also answers an unchanged subscription whose watch has {@code AlwaysRespond} set, but
   * only SotW's {@code NewWatchedResource} sets it; Delta makes its watches directly, so it never
   * is.
   */
  private boolean shouldRespondDelta(DeltaDiscoveryRequest request) {
    String typeUrl = request.getTypeUrl();
    if (request.hasErrorDetail()) {
      return false;
    }
    WatchedResource previous = watched.get(typeUrl);
    if (previous == null) {
      Subscription initial = deltaWatchedResources(Set.of(), request);
      watched.put(typeUrl, new WatchedResource(initial.names(), initial.wildcard()));
      return true;
    }
    String nonce = request.getResponseNonce();
    if (!nonce.isEmpty() && !nonce.equals(previous.nonceSent)) {
      return false;
    }
    Subscription updated = deltaWatchedResources(previous.resourceNames, request);
    previous.resourceNames = updated.names();
    return updated.changed();
  }

  /**
   * delta.go {@code deltaWatchedResources}: subscribe, then the names of initial_resource_versions,
   * then unsubscribe (so a name in both lists ends unsubscribed). "*" is wildcard and is not kept
   * as a name; a request that subscribes nothing is wildcard too.
   */
  private static Subscription deltaWatchedResources(
      Set<String> existing, DeltaDiscoveryRequest request) {
    Set<String> names = new HashSet<>(existing);
    boolean changed = false;
    for (String name : request.getResourceNamesSubscribeList()) {
      changed |= names.add(name);
    }
    for (String name : request.getInitialResourceVersionsMap().keySet()) {
      changed |= names.add(name);
    }
    for (String name : request.getResourceNamesUnsubscribeList()) {
      changed |= names.remove(name);
    }
    boolean wildcard = names.remove(WILDCARD) || request.getResourceNamesSubscribeCount() == 0;
    return new Subscription(Set.copyOf(names), wildcard, changed);
  }

  /**
   * delta.go {@code pushDeltaXds}: the generated resources, and as removed every name generated for
   * that the generator did not build, unless the generation was incremental. (istiod never reports
   * ECDS removals, {@code neverRemoveDelta}; the model generates no ECDS.) For a wildcard type the
   * watch then holds the names just sent ({@code shouldSetWatchedResources}), which is what the
   * next push's removals and the next request's "changed" are measured against.
   */
  @Override
  void push(String typeUrl, Set<String> names, Build build, String version) {
    Optional<Generated> generated = config.generate(typeUrl, names, build);
    if (generated.isEmpty()) {
      return;
    }
    Set<String> sent = generated.get().names();
    Set<String> removed = new TreeSet<>();
    if (!generated.get().incremental()) {
      removed.addAll(names);
      removed.removeAll(sent);
    }
    String nonce = model.nonce(version);
    send(
        DeltaDiscoveryResponse.newBuilder()
            .setTypeUrl(typeUrl)
            .setSystemVersionInfo(version)
            .setNonce(nonce)
            .addAllResources(generated.get().resources())
            .addAllRemovedResources(List.copyOf(removed))
            .build());
    WatchedResource watch = sentFor(typeUrl, nonce);
    if (isWildcardTypeUrl(typeUrl)) {
      watch.resourceNames = Set.copyOf(sent);
    }
  }
}
