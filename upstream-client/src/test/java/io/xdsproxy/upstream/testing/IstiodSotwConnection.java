package io.xdsproxy.upstream.testing;

import static io.xdsproxy.upstream.testing.IstiodConfig.CLUSTER_TYPE;
import static io.xdsproxy.upstream.testing.IstiodConfig.ENDPOINT_TYPE;
import static io.xdsproxy.upstream.testing.IstiodConfig.isWildcardTypeUrl;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.upstream.testing.IstiodConfig.Build;
import io.xdsproxy.upstream.testing.IstiodConfig.Generated;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;

/**
 * A SotW ADS stream to {@link IstiodModel}: pkg/xds/server.go {@code ShouldRespond} and xdsgen.go
 * {@code pushXds}.
 */
final class IstiodSotwConnection extends IstiodConnection<DiscoveryRequest, DiscoveryResponse> {

  /**
   * pkg/xds/server.go {@code ResourceDelta} as SotW fills it: only the added names, or none for the
   * whole watch.
   */
  private record ResourceDelta(Set<String> subscribed) {
    static final ResourceDelta EMPTY = new ResourceDelta(Set.of());

    boolean isEmpty() {
      return subscribed.isEmpty();
    }
  }

  IstiodSotwConnection(
      IstiodModel model, long streamId, StreamObserver<DiscoveryResponse> responses) {
    super(model, streamId, responses);
  }

  @Override
  Node nodeOf(DiscoveryRequest request) {
    return request.hasNode() ? request.getNode() : null;
  }

  /**
   * ads.go {@code processRequest}: a request that should be answered is a forced push of its type,
   * with the stream's last push version. xdsgen.go {@code pushXds}: a non-empty delta narrows what
   * is generated to the added names (for every proxy but proxyless gRPC); the watch itself keeps
   * every name, so later pushes send them all.
   */
  @Override
  void process(DiscoveryRequest request) {
    Optional<ResourceDelta> delta = shouldRespond(request);
    if (delta.isEmpty()) {
      return;
    }
    String typeUrl = request.getTypeUrl();
    Set<String> names =
        delta.get().isEmpty() ? watched.get(typeUrl).resourceNames : delta.get().subscribed();
    push(typeUrl, names, Build.EVERYTHING, lastPushVersion);
  }

  /**
   * pkg/xds/server.go {@code ShouldRespond}, in its order. Empty: no response. {@code version_info}
   * is never read: whether a request is an ACK is decided by its nonce and names alone.
   */
  private Optional<ResourceDelta> shouldRespond(DiscoveryRequest request) {
    String typeUrl = request.getTypeUrl();
    // A NACK: istiod records the error and answers nothing; the names it carries are not applied.
    if (request.hasErrorDetail()) {
      return Optional.empty();
    }
    // shouldUnsubscribe: no names on a non-wildcard type drops the watch, before any nonce check.
    if (request.getResourceNamesCount() == 0 && !isWildcardTypeUrl(typeUrl)) {
      watched.remove(typeUrl);
      return Optional.empty();
    }
    WatchedResource previous = watched.get(typeUrl);
    // INIT/RECONNECT: an empty nonce, or a type this connection never watched, answers everything
    // asked.
    if (request.getResponseNonce().isEmpty() || previous == null) {
      newWatchedResource(typeUrl, Set.copyOf(request.getResourceNamesList()));
      return Optional.of(ResourceDelta.EMPTY);
    }
    // Expired nonce: a newer response of the type went out since.
    if (!request.getResponseNonce().equals(previous.nonceSent)) {
      return Optional.empty();
    }
    // The nonce matches: the request's names become the watch, and the arming is used up.
    Set<String> before = previous.resourceNames;
    Set<String> now = Set.copyOf(request.getResourceNamesList());
    previous.resourceNames = now;
    boolean alwaysRespond = previous.alwaysRespond;
    previous.alwaysRespond = false;
    Set<String> added = new HashSet<>(now);
    added.removeAll(before);
    Set<String> removed = new HashSet<>(before);
    removed.removeAll(now);
    if (alwaysRespond) {
      return Optional.of(ResourceDelta.EMPTY);
    }
    // An ACK: same names.
    if (added.isEmpty() && removed.isEmpty()) {
      return Optional.empty();
    }
    // Only removals on a non-wildcard type: nothing new to send.
    if (!isWildcardTypeUrl(typeUrl) && added.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new ResourceDelta(Set.copyOf(added)));
  }

  /**
   * context.go {@code Proxy.NewWatchedResource}: a new watch, and for a Cluster watch ({@code
   * WarmingDependencies}) every existing EDS watch answers its next ACK-looking request once, so
   * that Envoy can finish warming the clusters it was just sent (envoy#13009).
   */
  private void newWatchedResource(String typeUrl, Set<String> names) {
    watched.put(typeUrl, new WatchedResource(names, false));
    if (typeUrl.equals(CLUSTER_TYPE) && watched.containsKey(ENDPOINT_TYPE)) {
      watched.get(ENDPOINT_TYPE).alwaysRespond = true;
    }
  }

  /**
   * xdsgen.go {@code pushXds}: one response with every generated resource, {@code version_info} the
   * push version and the nonce that version with a unique suffix (discovery.go {@code nonce});
   * nothing when the generator built nothing.
   */
  @Override
  void push(String typeUrl, Set<String> names, Build build, String version) {
    Optional<Generated> generated = config.generate(typeUrl, names, build);
    if (generated.isEmpty()) {
      return;
    }
    String nonce = model.nonce(version);
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder().setTypeUrl(typeUrl).setVersionInfo(version).setNonce(nonce);
    generated.get().resources().forEach(resource -> response.addResources(sotwAny(resource)));
    send(response.build());
    sentFor(typeUrl, nonce);
  }

  /**
   * pkg/xds/server.go {@code ResourcesToAny} sends the bare resource. A resource marked
   * do_not_cache (this suite's extension) goes in its Resource wrapper, the only place SotW can
   * carry the mark.
   */
  private static Any sotwAny(Resource resource) {
    return resource.hasCacheControl() ? Any.pack(resource) : resource.getResource();
  }
}
