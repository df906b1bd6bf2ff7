package io.xdsproxy.upstream.grpc;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.Channel;
import io.grpc.stub.ClientCallStreamObserver;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.ResourceDecoder.InvalidResourceException;
import io.xdsproxy.core.SerialExecutor;
import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource.AuditedType;
import io.xdsproxy.core.XdsResource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;

/**
 * One group audit's look at the control plane ({@link AdsUpstream#audit}): a stream of its own, as
 * a client of {@code node} would open, that subscribes once to what the group wants of each type,
 * acknowledges every answer (a control plane is never left with a NACK or an unanswered response it
 * waits on), and is closed once every type has answered and every name asked for is settled, or at
 * the not-found timeout. Nothing it receives goes anywhere but the audit's answer: the group's
 * session and store do not see it.
 *
 * <p>Only what the spec makes the two variants share is here; {@link Sotw} and {@link Delta} build
 * the requests and read the responses. State is confined to the audit's own {@link SerialExecutor}:
 * gRPC's callbacks and the timer only enqueue.
 *
 * @param <Q> the request message
 * @param <R> the response message
 */
abstract class AuditSession<Q, R> {

  /**
   * How long the control plane gets to end the stream after the audit half-closes it, before the
   * audit cancels it.
   */
  private static final Duration CLOSE_GRACE = Duration.ofSeconds(5);

  /** How the variant's stream is started. */
  private final AdsCall<Q, R> call;

  final Node node;
  final Map<TypeUrl, Interest> wanted;
  private final String target;
  private final SessionContext context;
  private final SerialExecutor executor;
  private final CompletableFuture<Map<TypeUrl, AuditedType>> answer = new CompletableFuture<>();

  /** What each type answered so far, by name. */
  private final Map<TypeUrl, Map<String, XdsResource>> answered = new HashMap<>();

  /** Per named type, the names asked for that no answer has settled yet (sent, or removed). */
  private final Map<TypeUrl, Set<String>> unsettled = new HashMap<>();

  private ClientCallStreamObserver<Q> stream;
  private boolean finished;

  AuditSession(
      Node node,
      Map<TypeUrl, Interest> wanted,
      String target,
      SessionContext context,
      AdsCall<Q, R> call) {
    this.call = call;
    this.node = node;
    this.wanted = Map.copyOf(wanted);
    this.target = target;
    this.context = context;
    this.executor = new SerialExecutor(context.pool(), "audit of node " + node.getId());
    wanted.forEach(
        (type, interest) -> {
          if (!interest.wildcard()) {
            unsettled.put(type, new HashSet<>(interest.names()));
          }
        });
  }

  /** An audit of {@code node} over State of the World ADS. */
  static AuditSession<?, ?> sotw(
      Node node, Map<TypeUrl, Interest> wanted, String target, SessionContext context) {
    return new Sotw(node, wanted, target, context);
  }

  /** An audit of {@code node} over Delta ADS. */
  static AuditSession<?, ?> delta(
      Node node, Map<TypeUrl, Interest> wanted, String target, SessionContext context) {
    return new Delta(node, wanted, target, context);
  }

  /** Opens the stream on {@code channel}; the answer completes when the audit is over. */
  CompletableFuture<Map<TypeUrl, AuditedType>> start(Channel channel) {
    if (wanted.isEmpty()) {
      return CompletableFuture.completedFuture(Map.of());
    }
    executor.execute(() -> open(channel));
    later(context.notFoundTimeout(), this::finish);
    return answer;
  }

  /** The first request of {@code type}: what the group wants of it, from a node with nothing. */
  abstract Q subscribe(TypeUrl type, Interest interest);

  /** A response arrived; the variant acknowledges it and calls {@link #received}. */
  abstract void onResponse(R response) throws InvalidResourceException;

  private void open(Channel channel) {
    call.start(
        channel,
        executor,
        requests -> stream = requests,
        response -> {
          if (finished) {
            return;
          }
          try {
            onResponse(response);
          } catch (InvalidResourceException e) {
            fail("it sent a response the proxy rejects (NACKed): " + e.getMessage());
          }
        },
        status -> fail("the stream ended: " + status.getCode() + " " + status.getDescription()));
    // Make-before-break order, as a client would subscribe.
    for (TypeUrl type : new TreeMap<>(wanted).keySet()) {
      send(subscribe(type, wanted.get(type)));
    }
  }

  /** The type a response names, if the audit asked for it. */
  final TypeUrl wantedType(String typeUrl) {
    try {
      TypeUrl type = TypeUrl.parse(typeUrl);
      return wanted.containsKey(type) ? type : null;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /**
   * {@code type} answered: {@code resources} sent, {@code removed} gone; with {@code whole}, the
   * answer is all the node has of what was asked (a SotW Listener or Cluster response, a wildcard's
   * first answer), and replaces what came before.
   */
  final void received(
      TypeUrl type, Collection<XdsResource> resources, Collection<String> removed, boolean whole) {
    Map<String, XdsResource> byName = answered.computeIfAbsent(type, t -> new HashMap<>());
    if (whole) {
      byName.clear();
    }
    Set<String> open = unsettled.getOrDefault(type, new HashSet<>());
    for (XdsResource resource : resources) {
      byName.put(resource.name(), resource);
      open.remove(resource.name());
    }
    for (String name : removed) {
      byName.remove(name);
      open.remove(name);
    }
    if (whole) {
      open.clear();
    }
    if (answered.keySet().containsAll(wanted.keySet())
        && unsettled.values().stream().allMatch(Set::isEmpty)) {
      finish();
    }
  }

  final boolean hasAnswered(TypeUrl type) {
    return answered.containsKey(type);
  }

  final void send(Q request) {
    if (stream != null && !finished) {
      stream.onNext(request);
    }
  }

  /** Every type answered, or the time is up: the answer is what came. */
  private void finish() {
    executor.execute(
        () -> {
          if (finished) {
            return;
          }
          finished = true;
          Map<TypeUrl, AuditedType> types = new HashMap<>();
          answered.forEach((type, byName) -> types.put(type, new AuditedType(type, byName)));
          answer.complete(Map.copyOf(types));
          close();
        });
  }

  private void fail(String why) {
    if (finished) {
      return;
    }
    finished = true;
    answer.completeExceptionally(
        new IllegalStateException(
            "the audit of node '"
                + node.getId()
                + "' at control plane "
                + target
                + " failed: "
                + why));
    close();
  }

  /**
   * Half-closes the stream, as a client that is done; the control plane ends it, or it is cancelled
   * after {@link #CLOSE_GRACE}.
   */
  private void close() {
    ClientCallStreamObserver<Q> ending = stream;
    if (ending == null) {
      return;
    }
    try {
      ending.onCompleted();
    } catch (IllegalStateException alreadyClosed) {
      return;
    }
    later(CLOSE_GRACE, () -> ending.cancel("xds-proxy's group audit is over", null));
  }

  private void later(Duration delay, Runnable task) {
    if (!context.later(executor, delay, task)) {
      executor.execute(() -> fail("the proxy is shutting down"));
    }
  }

  /** The audit over State of the World ADS. */
  private static final class Sotw extends AuditSession<DiscoveryRequest, DiscoveryResponse> {

    Sotw(Node node, Map<TypeUrl, Interest> wanted, String target, SessionContext context) {
      super(node, wanted, target, context, AdsCall.SOTW);
    }

    /** A wildcard the legacy way, with no names, as the group's session asks for one. */
    @Override
    DiscoveryRequest subscribe(TypeUrl type, Interest interest) {
      return request(type, interest, "", "").build();
    }

    private DiscoveryRequest.Builder request(
        TypeUrl type, Interest interest, String version, String nonce) {
      return DiscoveryRequest.newBuilder()
          .setNode(node)
          .setTypeUrl(type.url())
          .setVersionInfo(version)
          .setResponseNonce(nonce)
          .addAllResourceNames(
              interest.wildcard() ? List.of() : List.copyOf(new TreeSet<>(interest.names())));
    }

    @Override
    void onResponse(DiscoveryResponse response) throws InvalidResourceException {
      TypeUrl type = wantedType(response.getTypeUrl());
      if (type == null) {
        return;
      }
      Interest interest = wanted.get(type);
      ResourceDecoder.Decoded decoded;
      try {
        decoded = ResourceDecoder.decode(type, response.getResourcesList());
      } catch (InvalidResourceException e) {
        send(
            request(type, interest, "", response.getNonce())
                .setErrorDetail(
                    AdsSession.rejection(
                        type, "version " + response.getVersionInfo(), e.getMessage()))
                .build());
        throw e;
      }
      send(request(type, interest, response.getVersionInfo(), response.getNonce()).build());
      // "Grouping Resources into Responses": a Listener or Cluster response, or any answer to a
      // wildcard, is the whole state of what was asked for.
      boolean whole = type.isFullStateInSotw() || interest.wildcard();
      received(type, decoded.resources(), List.of(), whole);
    }
  }

  /** The audit over Delta ADS. */
  private static final class Delta
      extends AuditSession<DeltaDiscoveryRequest, DeltaDiscoveryResponse> {

    Delta(Node node, Map<TypeUrl, Interest> wanted, String target, SessionContext context) {
      super(node, wanted, target, context, AdsCall.DELTA);
    }

    /**
     * A wildcard alone the legacy way (no names), as the group's session subscribes; beside names,
     * {@code *} and the names.
     */
    @Override
    DeltaDiscoveryRequest subscribe(TypeUrl type, Interest interest) {
      List<String> names = new ArrayList<>(new TreeSet<>(interest.names()));
      if (interest.wildcard() && !names.isEmpty()) {
        names.add(0, Subscription.WILDCARD);
      }
      return DeltaDiscoveryRequest.newBuilder()
          .setNode(node)
          .setTypeUrl(type.url())
          .addAllResourceNamesSubscribe(names)
          .build();
    }

    @Override
    void onResponse(DeltaDiscoveryResponse response) throws InvalidResourceException {
      TypeUrl type = wantedType(response.getTypeUrl());
      if (type == null) {
        return;
      }
      List<XdsResource> resources = new ArrayList<>();
      try {
        for (int i = 0; i < response.getResourcesCount(); i++) {
          Resource wrapper = response.getResources(i);
          if (wrapper.hasResource()) {
            resources.add(ResourceDecoder.decodeWrapped(type, i, wrapper));
          }
        }
      } catch (InvalidResourceException e) {
        send(
            DeltaDiscoveryRequest.newBuilder()
                .setNode(node)
                .setTypeUrl(type.url())
                .setResponseNonce(response.getNonce())
                .setErrorDetail(
                    AdsSession.rejection(type, "response " + response.getNonce(), e.getMessage()))
                .build());
        throw e;
      }
      send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node)
              .setTypeUrl(type.url())
              .setResponseNonce(response.getNonce())
              .build());
      // A wildcard's first answer names every resource the node has; later ones are changes.
      boolean whole = wanted.get(type).wildcard() && !hasAnswered(type);
      received(type, resources, response.getRemovedResourcesList(), whole);
    }
  }
}
