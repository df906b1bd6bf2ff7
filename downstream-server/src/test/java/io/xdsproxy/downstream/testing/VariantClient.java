package io.xdsproxy.downstream.testing;

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
import java.util.function.Predicate;

/**
 * An xDS client that speaks any of the four variants of the transport protocol and keeps what it
 * holds as a real client would: a SotW Listener or Cluster response replaces the type's resources, a
 * response of another type adds to them, a Delta response adds and removes. It ACKs every response
 * it applies, as Envoy does, or NACKs the next one when told to. The conformance suite states its
 * rules against this, once, for every variant.
 */
public final class VariantClient implements AutoCloseable {

  /** The four variants ("Variants of the xDS Transport Protocol"). */
  public enum Variant {
    SOTW_ADS, SOTW_PER_TYPE, DELTA_ADS, DELTA_PER_TYPE;

    public boolean delta() {
      return this == DELTA_ADS || this == DELTA_PER_TYPE;
    }

    public boolean ads() {
      return this == SOTW_ADS || this == DELTA_ADS;
    }
  }

  private final Variant variant;
  private final int port;
  private final Node node;
  private final Map<TypeUrl, XdsTestClient<DiscoveryRequest, DiscoveryResponse>> sotw = new HashMap<>();
  private final Map<TypeUrl, XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse>> delta = new HashMap<>();
  private final Map<TypeUrl, Set<String>> subscribed = new HashMap<>();
  private final Map<TypeUrl, Map<String, Any>> held = new HashMap<>();
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

  public Variant variant() {
    return variant;
  }

  /**
   * Subscribes to more names of {@code type}; none, on a type's first request, is the legacy
   * wildcard. SotW sends the whole new list; Delta sends only the new names.
   */
  public void subscribe(TypeUrl type, String... names) {
    Set<String> now = subscribed.computeIfAbsent(type, t -> new LinkedHashSet<>());
    now.addAll(List.of(names));
    if (variant.delta()) {
      sendDelta(type, DeltaDiscoveryRequest.newBuilder().addAllResourceNamesSubscribe(List.of(names)));
    } else {
      sendSotw(type, DiscoveryRequest.newBuilder().addAllResourceNames(now));
    }
  }

  /** Unsubscribes from names of {@code type}. */
  public void unsubscribe(TypeUrl type, String... names) {
    Set<String> now = subscribed.computeIfAbsent(type, t -> new LinkedHashSet<>());
    now.removeAll(List.of(names));
    if (variant.delta()) {
      sendDelta(type, DeltaDiscoveryRequest.newBuilder().addAllResourceNamesUnsubscribe(List.of(names)));
    } else {
      sendSotw(type, DiscoveryRequest.newBuilder().addAllResourceNames(now));
    }
  }

  /** The next response of {@code type} is rejected (NACKed with an error_detail) rather than applied. */
  public void rejectNext(TypeUrl type) {
    rejectNext.add(type);
  }

  /** The resources of {@code type} the client holds, by name. */
  public Map<String, Any> held(TypeUrl type) {
    return Map.copyOf(held.getOrDefault(type, Map.of()));
  }

  /**
   * Reads and applies responses of {@code type} until what the client holds satisfies {@code
   * condition}; fails with the transcript after {@code timeout}.
   */
  public void awaitHeld(TypeUrl type, Duration timeout, Predicate<Map<String, Any>> condition) {
    Instant deadline = Instant.now().plus(timeout);
    while (!condition.test(held(type))) {
      Duration left = Duration.between(Instant.now(), deadline);
      assertThat(left.isNegative()).as("%s: held %s never satisfied the condition; transcript:%n%s", variant,
          held(type).keySet(), transcript(type)).isFalse();
      receive(type, left);
    }
  }

  /** Reads, applies and answers the next response of {@code type}. Returns whether it was applied. */
  public boolean receive(TypeUrl type, Duration timeout) {
    if (variant.delta()) {
      DeltaDiscoveryResponse response = deltaStream(type).next(timeout);
      assertThat(response.getTypeUrl()).isEqualTo(type.url());
      boolean reject = rejectNext.remove(type);
      if (!reject) {
        Map<String, Any> resources = held.computeIfAbsent(type, t -> new HashMap<>());
        for (Resource resource : response.getResourcesList()) {
          resources.put(resource.getName(), resource.getResource());
        }
        response.getRemovedResourcesList().forEach(resources::remove);
      }
      DeltaDiscoveryRequest.Builder answer = DeltaDiscoveryRequest.newBuilder().setResponseNonce(response.getNonce());
      if (reject) {
        answer.setErrorDetail(Status.newBuilder().setCode(3).setMessage("rejected by the test"));
      }
      sendDelta(type, answer);
      return !reject;
    }
    DiscoveryResponse response = sotwStream(type).next(timeout);
    assertThat(response.getTypeUrl()).isEqualTo(type.url());
    boolean reject = rejectNext.remove(type);
    if (!reject) {
      Map<String, Any> resources = held.computeIfAbsent(type, t -> new HashMap<>());
      if (type.isFullStateInSotw()) {
        resources.clear();
      }
      for (Any any : response.getResourcesList()) {
        resources.put(ResourceDecoder.nameOf(any.getValue()), any);
      }
      lastVersion.put(type, response.getVersionInfo());
    }
    lastNonce.put(type, response.getNonce());
    DiscoveryRequest.Builder answer = DiscoveryRequest.newBuilder()
        .addAllResourceNames(subscribed.getOrDefault(type, Set.of()));
    if (reject) {
      answer.setErrorDetail(Status.newBuilder().setCode(3).setMessage("rejected by the test"));
    }
    sendSotw(type, answer);
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
    return variant.delta() ? deltaStream(type).awaitEnd(timeout) : sotwStream(type).awaitEnd(timeout);
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
    request.setTypeUrl(type.url())
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
    return sotw.computeIfAbsent(key, k -> new XdsTestClient<>(port, variant.ads()
        ? AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod()
        : sotwMethod(type)));
  }

  private XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> deltaStream(TypeUrl type) {
    TypeUrl key = variant.ads() ? null : type;
    return delta.computeIfAbsent(key, k -> new XdsTestClient<>(port, variant.ads()
        ? AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod()
        : deltaMethod(type)));
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

  private static MethodDescriptor<DeltaDiscoveryRequest, DeltaDiscoveryResponse> deltaMethod(TypeUrl type) {
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

  private String transcript(TypeUrl type) {
    return variant.delta() ? deltaStream(type).transcript() : sotwStream(type).transcript();
  }

  @Override
  public void close() {
    List<AutoCloseable> streams = new ArrayList<>(sotw.values());
    streams.addAll(delta.values());
    for (AutoCloseable stream : streams) {
      try {
        stream.close();
      } catch (Exception e) {
        // closing a test stream: nothing to do
      }
    }
  }
}
