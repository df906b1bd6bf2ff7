package io.xdsproxy.app.testing;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.rpc.Status;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.cluster.v3.ClusterDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.envoyproxy.envoy.service.endpoint.v3.EndpointDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.listener.v3.ListenerDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.route.v3.RouteDiscoveryServiceGrpc;
import io.grpc.Channel;
import io.grpc.MethodDescriptor;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.TypeUrl;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * An xDS client that speaks any of the four variants of the transport protocol and keeps what it
 * holds as a real client would: a SotW Listener or Cluster response replaces the type's resources,
 * a response of another type adds to them, a Delta response adds and removes. It ACKs every
 * response it applies, as Envoy does, or NACKs the next one when told to. The conformance suite
 * states its rules against this, once, for every variant.
 */
public final class VariantClient implements AutoCloseable {

  /** The four variants ("Variants of the xDS Transport Protocol"). */
  public enum Variant {
    SOTW_ADS,
    SOTW_PER_TYPE,
    DELTA_ADS,
    DELTA_PER_TYPE;

    public boolean delta() {
      return this == DELTA_ADS || this == DELTA_PER_TYPE;
    }

    public boolean ads() {
      return this == SOTW_ADS || this == DELTA_ADS;
    }
  }

  private final Variant variant;
  private final int port;

  /**
   * The channel every stream of this client goes on, shared with other clients; null: a channel per
   * stream.
   */
  private Channel channel;

  private final Node node;
  private final Map<TypeUrl, XdsTestClient<DiscoveryRequest, DiscoveryResponse>> sotw =
      new HashMap<>();
  private final Map<TypeUrl, XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse>> delta =
      new HashMap<>();
  private final Map<TypeUrl, Set<String>> subscribed = new HashMap<>();

  /**
   * What the client holds, as of the last response it ACKed: it ACKs before it takes the new state.
   */
  private final Map<TypeUrl, Map<String, Any>> held = new HashMap<>();

  /**
   * The version of each resource held: Delta's per-resource version, or SotW's version_info of the
   * response.
   */
  private final Map<TypeUrl, Map<String, String>> heldVersions = new HashMap<>();

  /**
   * Every resource (name@version) received on the current streams, in order: what a reconnect cost.
   */
  private final Map<TypeUrl, List<String>> receivedSinceConnect = new HashMap<>();

  private final Map<TypeUrl, String> lastVersion = new HashMap<>();
  private final Map<TypeUrl, String> lastNonce = new HashMap<>();
  private final Set<TypeUrl> rejectNext = new LinkedHashSet<>();
  private final Set<TypeUrl> streamsWithNode = new LinkedHashSet<>();
  private boolean nodeSent;

  public VariantClient(Variant variant, int port, Node node) {
    this.variant = variant;
    this.port = port;
    this.node = node;
  }

  /** A client whose streams all go on {@code channel}, which many clients may share. */
  public VariantClient(Variant variant, Channel channel, Node node) {
    this(variant, -1, node);
    this.channel = channel;
  }

  public Variant variant() {
    return variant;
  }

  public Node node() {
    return node;
  }

  /** What the client subscribed to, per type: an empty set is the wildcard. */
  public Map<TypeUrl, Set<String>> subscriptions() {
    Map<TypeUrl, Set<String>> copy = new TreeMap<>();
    subscribed.forEach((type, names) -> copy.put(type, Set.copyOf(names)));
    return copy;
  }

  /**
   * Subscribes to more names of {@code type}; none, on a type's first request, is the legacy
   * wildcard. SotW sends the whole new list; Delta sends only the new names.
   */
  public void subscribe(TypeUrl type, String... names) {
    Set<String> now = subscribed.computeIfAbsent(type, t -> new LinkedHashSet<>());
    now.addAll(List.of(names));
    if (variant.delta()) {
      sendDelta(
          type, DeltaDiscoveryRequest.newBuilder().addAllResourceNamesSubscribe(List.of(names)));
    } else {
      sendSotw(type, DiscoveryRequest.newBuilder().addAllResourceNames(now));
    }
  }

  /** Unsubscribes from names of {@code type}. */
  public void unsubscribe(TypeUrl type, String... names) {
    Set<String> now = subscribed.computeIfAbsent(type, t -> new LinkedHashSet<>());
    now.removeAll(List.of(names));
    if (variant.delta()) {
      sendDelta(
          type, DeltaDiscoveryRequest.newBuilder().addAllResourceNamesUnsubscribe(List.of(names)));
    } else {
      sendSotw(type, DiscoveryRequest.newBuilder().addAllResourceNames(now));
    }
  }

  /**
   * Ends every stream and opens new ones, on {@code newChannel} if not null, as a client does when
   * its connection drops: it keeps what it holds and says so, SotW with the version_info it last
   * ACKed, Delta with initial_resource_versions ("Reconnect" in the spec), and subscribes again.
   */
  public void reconnect(Channel newChannel) {
    closeStreams();
    if (newChannel != null) {
      channel = newChannel;
    }
    nodeSent = false;
    streamsWithNode.clear();
    lastNonce.clear();
    receivedSinceConnect.clear();
    for (Map.Entry<TypeUrl, Set<String>> subscription : subscribed.entrySet()) {
      TypeUrl type = subscription.getKey();
      if (variant.delta()) {
        sendDelta(
            type,
            DeltaDiscoveryRequest.newBuilder()
                .addAllResourceNamesSubscribe(subscription.getValue())
                .putAllInitialResourceVersions(heldVersions.getOrDefault(type, Map.of())));
      } else {
        sendSotw(type, DiscoveryRequest.newBuilder().addAllResourceNames(subscription.getValue()));
      }
    }
  }

  /** Cancels the stream that carries {@code type}, as a client that vanishes mid-response does. */
  public void cancel(TypeUrl type) {
    if (variant.delta()) {
      deltaStream(type).cancel();
    } else {
      sotwStream(type).cancel();
    }
  }

  /**
   * The next response of {@code type} is rejected (NACKed with an error_detail) rather than
   * applied.
   */
  public void rejectNext(TypeUrl type) {
    rejectNext.add(type);
  }

  /** The resources of {@code type} the client holds (and ACKed), by name. */
  public Map<String, Any> held(TypeUrl type) {
    return Map.copyOf(held.getOrDefault(type, Map.of()));
  }

  /**
   * The version of each resource of {@code type} held: per resource for Delta, the response's
   * version_info for SotW.
   */
  public Map<String, String> heldVersions(TypeUrl type) {
    return Map.copyOf(heldVersions.getOrDefault(type, Map.of()));
  }

  /**
   * Each resource of {@code type} received since the streams were (re)opened, as name@version, in
   * order.
   */
  public List<String> receivedSinceConnect(TypeUrl type) {
    return List.copyOf(receivedSinceConnect.getOrDefault(type, List.of()));
  }

  /**
   * Reads and applies responses of {@code type} until what the client holds satisfies {@code
   * condition}; fails with the transcript after {@code timeout}.
   */
  public void awaitHeld(TypeUrl type, Duration timeout, Predicate<Map<String, Any>> condition) {
    Instant deadline = Instant.now().plus(timeout);
    while (!condition.test(held(type))) {
      Duration left = Duration.between(Instant.now(), deadline);
      assertThat(left.isNegative())
          .as(
              "%s: held %s never satisfied the condition; transcript:%n%s",
              variant, held(type).keySet(), transcript(type))
          .isFalse();
      receive(type, left);
    }
  }

  /**
   * Reads, applies and answers the next response of {@code type}. Returns whether it was applied.
   */
  public boolean receive(TypeUrl type, Duration timeout) {
    if (variant.delta()) {
      DeltaDiscoveryResponse response = deltaStream(type).next(timeout);
      assertThat(response.getTypeUrl()).isEqualTo(type.url());
      return apply(type, response);
    }
    DiscoveryResponse response = sotwStream(type).next(timeout);
    assertThat(response.getTypeUrl()).isEqualTo(type.url());
    return apply(type, response);
  }

  /**
   * Applies and answers every response that has arrived on any stream of this client, whatever its
   * type, without waiting. Returns how many there were.
   */
  public int pump() {
    int count = 0;
    for (XdsTestClient<DiscoveryRequest, DiscoveryResponse> stream : List.copyOf(sotw.values())) {
      for (var next = stream.poll(); next.isPresent(); next = stream.poll()) {
        apply(TypeUrl.parse(next.get().getTypeUrl()), next.get());
        count++;
      }
    }
    for (XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> stream :
        List.copyOf(delta.values())) {
      for (var next = stream.poll(); next.isPresent(); next = stream.poll()) {
        apply(TypeUrl.parse(next.get().getTypeUrl()), next.get());
        count++;
      }
    }
    return count;
  }

  /** Whether a stream of this client has ended (an error from the proxy, or a cancel). */
  public boolean anyStreamEnded() {
    return sotw.values().stream().anyMatch(XdsTestClient::ended)
        || delta.values().stream().anyMatch(XdsTestClient::ended);
  }

  /**
   * How each stream of this client that has ended ended, without waiting: empty while all are open.
   * A client that reconnects on its own tells by this whether it should (UNAVAILABLE: a connection
   * aged out or a replica went away) or has met an error to report.
   */
  public List<io.grpc.Status> streamEnds() {
    List<io.grpc.Status> ends = new ArrayList<>();
    sotw.values().forEach(stream -> stream.endStatus().ifPresent(ends::add));
    delta.values().forEach(stream -> stream.endStatus().ifPresent(ends::add));
    return ends;
  }

  private boolean apply(TypeUrl type, DeltaDiscoveryResponse response) {
    boolean reject = rejectNext.remove(type);
    Map<String, Any> resources = new HashMap<>(held.getOrDefault(type, Map.of()));
    Map<String, String> versions = new HashMap<>(heldVersions.getOrDefault(type, Map.of()));
    List<String> received = receivedSinceConnect.computeIfAbsent(type, t -> new ArrayList<>());
    for (Resource resource : response.getResourcesList()) {
      resources.put(resource.getName(), resource.getResource());
      versions.put(resource.getName(), resource.getVersion());
      received.add(resource.getName() + "@" + resource.getVersion());
    }
    response.getRemovedResourcesList().forEach(resources::remove);
    response.getRemovedResourcesList().forEach(versions::remove);
    DeltaDiscoveryRequest.Builder answer =
        DeltaDiscoveryRequest.newBuilder().setResponseNonce(response.getNonce());
    if (reject) {
      answer.setErrorDetail(Status.newBuilder().setCode(3).setMessage("rejected by the test"));
    }
    sendDelta(type, answer);
    if (!reject) {
      held.put(type, resources);
      heldVersions.put(type, versions);
    }
    return !reject;
  }

  private boolean apply(TypeUrl type, DiscoveryResponse response) {
    boolean reject = rejectNext.remove(type);
    Map<String, Any> resources =
        type.isFullStateInSotw()
            ? new HashMap<>()
            : new HashMap<>(held.getOrDefault(type, Map.of()));
    Map<String, String> versions =
        type.isFullStateInSotw()
            ? new HashMap<>()
            : new HashMap<>(heldVersions.getOrDefault(type, Map.of()));
    List<String> received = receivedSinceConnect.computeIfAbsent(type, t -> new ArrayList<>());
    for (Any any : response.getResourcesList()) {
      String name = ResourceDecoder.nameOf(any.getValue());
      resources.put(name, any);
      versions.put(name, response.getVersionInfo());
      received.add(name + "@" + response.getVersionInfo());
    }
    lastNonce.put(type, response.getNonce());
    if (!reject) {
      lastVersion.put(type, response.getVersionInfo());
    }
    DiscoveryRequest.Builder answer =
        DiscoveryRequest.newBuilder().addAllResourceNames(subscribed.getOrDefault(type, Set.of()));
    if (reject) {
      answer.setErrorDetail(Status.newBuilder().setCode(3).setMessage("rejected by the test"));
    }
    sendSotw(type, answer);
    if (!reject) {
      held.put(type, resources);
      heldVersions.put(type, versions);
    }
    return !reject;
  }

  /** Asserts that no response of {@code type} comes within {@code quiet}. */
  public void expectNoResponse(TypeUrl type, Duration quiet) {
    if (variant.delta()) {
      deltaStream(type).expectNoResponse(quiet);
    } else {
      sotwStream(type).expectNoResponse(quiet);
    }
  }

  /** How the stream of {@code type} ended. */
  public io.grpc.Status awaitEnd(TypeUrl type, Duration timeout) {
    return variant.delta()
        ? deltaStream(type).awaitEnd(timeout)
        : sotwStream(type).awaitEnd(timeout);
  }

  /** Sends a raw SotW request on the stream of {@code type}, as the test wrote it. */
  public void sendRawSotw(TypeUrl streamType, DiscoveryRequest request) {
    sotwStream(streamType).send(request);
  }

  /** Sends a raw Delta request on the stream of {@code type}, as the test wrote it. */
  public void sendRawDelta(TypeUrl streamType, DeltaDiscoveryRequest request) {
    deltaStream(streamType).send(request);
  }

  private void sendSotw(TypeUrl type, DiscoveryRequest.Builder request) {
    request
        .setTypeUrl(type.url())
        .setVersionInfo(lastVersion.getOrDefault(type, ""))
        .setResponseNonce(lastNonce.getOrDefault(type, ""));
    XdsTestClient<DiscoveryRequest, DiscoveryResponse> stream = sotwStream(type);
    if (needsNode(type)) {
      request.setNode(node);
    }
    stream.send(request.build());
  }

  private void sendDelta(TypeUrl type, DeltaDiscoveryRequest.Builder request) {
    request.setTypeUrl(type.url());
    XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> stream = deltaStream(type);
    if (needsNode(type)) {
      request.setNode(node);
    }
    stream.send(request.build());
  }

  /** The first request of each stream carries the node: one for ADS, one per type otherwise. */
  private boolean needsNode(TypeUrl type) {
    if (variant.ads()) {
      boolean first = !nodeSent;
      nodeSent = true;
      return first;
    }
    return streamsWithNode.add(type);
  }

  private XdsTestClient<DiscoveryRequest, DiscoveryResponse> sotwStream(TypeUrl type) {
    TypeUrl key = variant.ads() ? null : type;
    MethodDescriptor<DiscoveryRequest, DiscoveryResponse> method =
        variant.ads()
            ? AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod()
            : sotwMethod(type);
    return sotw.computeIfAbsent(
        key,
        k ->
            channel != null
                ? new XdsTestClient<>(channel, method)
                : new XdsTestClient<>(port, method));
  }

  private XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> deltaStream(TypeUrl type) {
    TypeUrl key = variant.ads() ? null : type;
    MethodDescriptor<DeltaDiscoveryRequest, DeltaDiscoveryResponse> method =
        variant.ads()
            ? AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod()
            : deltaMethod(type);
    return delta.computeIfAbsent(
        key,
        k ->
            channel != null
                ? new XdsTestClient<>(channel, method)
                : new XdsTestClient<>(port, method));
  }

  private static MethodDescriptor<DiscoveryRequest, DiscoveryResponse> sotwMethod(TypeUrl type) {
    if (type.equals(TypeUrl.LISTENER)) {
      return ListenerDiscoveryServiceGrpc.getStreamListenersMethod();
    } else if (type.equals(TypeUrl.ROUTE)) {
      return RouteDiscoveryServiceGrpc.getStreamRoutesMethod();
    } else if (type.equals(TypeUrl.CLUSTER)) {
      return ClusterDiscoveryServiceGrpc.getStreamClustersMethod();
    } else if (type.equals(TypeUrl.ENDPOINT)) {
      return EndpointDiscoveryServiceGrpc.getStreamEndpointsMethod();
    }
    throw new IllegalArgumentException("no per-type service in the test client for " + type);
  }

  private static MethodDescriptor<DeltaDiscoveryRequest, DeltaDiscoveryResponse> deltaMethod(
      TypeUrl type) {
    if (type.equals(TypeUrl.LISTENER)) {
      return ListenerDiscoveryServiceGrpc.getDeltaListenersMethod();
    } else if (type.equals(TypeUrl.ROUTE)) {
      return RouteDiscoveryServiceGrpc.getDeltaRoutesMethod();
    } else if (type.equals(TypeUrl.CLUSTER)) {
      return ClusterDiscoveryServiceGrpc.getDeltaClustersMethod();
    } else if (type.equals(TypeUrl.ENDPOINT)) {
      return EndpointDiscoveryServiceGrpc.getDeltaEndpointsMethod();
    }
    throw new IllegalArgumentException("no per-type service in the test client for " + type);
  }

  /** What was exchanged on the stream that carries {@code type}. */
  public String transcript(TypeUrl type) {
    TypeUrl key = variant.ads() ? null : type;
    XdsTestClient<?, ?> stream = variant.delta() ? delta.get(key) : sotw.get(key);
    return stream == null ? "(no stream open)" : stream.transcript();
  }

  @Override
  public void close() {
    closeStreams();
  }

  private void closeStreams() {
    List<AutoCloseable> streams = new ArrayList<>(sotw.values());
    streams.addAll(delta.values());
    for (AutoCloseable stream : streams) {
      try {
        stream.close();
      } catch (Exception e) {
        // closing a test stream: nothing to do
      }
    }
    sotw.clear();
    delta.clear();
  }
}
