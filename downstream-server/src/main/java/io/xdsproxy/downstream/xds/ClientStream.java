package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.ClientFeatures;
import io.xdsproxy.core.ClusterEndpoints;
import io.xdsproxy.core.GroupWatcher;
import io.xdsproxy.core.LimitedLog;
import io.xdsproxy.core.LogFields;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.NodeGrouping.UngroupableNodeException;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.SerialExecutor;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.net.SocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * What every downstream xDS stream does, whatever its variant: learn the client's node from the
 * first request and hold its node group, read requests one at a time, hear of new snapshots, and
 * write responses in make-before-break order when the transport can take them. {@link SotwStream}
 * and {@link DeltaStream} add the protocol, each type's logical stream a {@link TypeState}. All
 * state lives on the stream's own {@link SerialExecutor}.
 *
 * <p>Memory stays bounded whatever the client does (DESIGN invariant 8): requests are read one at a
 * time (manual flow control), snapshots from the node group coalesce into "this type changed", and
 * a response is only built when the transport is ready to take it, so a slow client gets the newest
 * state when it catches up, not a backlog.
 *
 * @param <Q> the request message
 * @param <S> the state of one type's logical stream in the variant
 */
abstract class ClientStream<Q, S extends TypeState<?>> implements StreamObserver<Q>, GroupWatcher {

  /** One type's logical stream, and what the transport owes it. */
  private static final class Slot<S> {
    final S state;
    /** A response is owed that the transport was not ready for: flushed, in push order, when it is. */
    boolean blocked;
    /** An update the client has not been written yet, and when it reached the proxy: for the fan-out latency. */
    boolean unwritten;
    long unwrittenSince;

    Slot(S state) {
      this.state = state;
    }
  }

  private static final Logger log = LoggerFactory.getLogger(ClientStream.class);
  // A reconnect storm or a client failing in a loop must not flood the log: each kind of line is limited.
  private static final LimitedLog opens = LimitedLog.of(log, Level.INFO, 100, Duration.ofSeconds(10));
  private static final LimitedLog closes = LimitedLog.of(log, Level.INFO, 100, Duration.ofSeconds(10));
  private static final LimitedLog failures = LimitedLog.of(log, Level.WARN, 100, Duration.ofSeconds(10));
  private static final LimitedLog errors = LimitedLog.of(log, Level.ERROR, 20, Duration.ofSeconds(10));
  /** Streams ended or paced for a limit: a flood of them must not flood the log. */
  private static final LimitedLog refusals = LimitedLog.of(log, Level.WARN, 100, Duration.ofSeconds(10));
  /** NACKs from clients. */
  private static final LimitedLog nacks = LimitedLog.of(log, Level.WARN, 100, Duration.ofSeconds(10));

  private final ServerCallStreamObserver<EncodedResponse> responses;
  /** The node groups, metrics, registry of streams, clock, timer and limits every stream shares. */
  private final Serving serving;
  /** For metrics: "sotw" or "delta", and "ads" or the type of a per-type service. */
  private final String protocol;
  private final String service;
  private final Optional<TypeUrl> fixedType;
  private final SerialExecutor executor;
  private final SocketAddress peer;
  private final String variant;
  /** Taken on the call's thread, where the peer's TLS certificate is in the gRPC context. */
  private final NodeIdCheck nodeIdCheck = PeerInterceptor.currentNodeIdCheck();

  /**
   * Batches of snapshots the group published since the executor last looked (each batch is the
   * group's own list, shared by its streams); a batch is taken whole, so types that changed together
   * are pushed together. Only their types count: the executor reads the group's current snapshots,
   * so a stream never goes back in time.
   */
  private final Queue<List<TypeSnapshot>> changedBatches = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean changedScheduled = new AtomicBoolean();

  // Confined to the executor from here on.
  /** The types the client asked for, in push order. */
  private final TreeMap<TypeUrl, Slot<S>> types = new TreeMap<>();
  private Node node;
  /** The stream counts among the streams of this node id ({@link Clients#admit}) until it ends. */
  private boolean admitted;
  private String nodeId;
  private NodeGroup group;
  private long nonces;
  private boolean closed;
  /** Requests the stream may still read at once, and when that was last worked out: the request rate. */
  private double requestTokens;
  private long requestTokensAt;
  /** The stream was paced for its request rate: logged and counted once. */
  private boolean paced;
  /**
   * Assignments of clusters a Cluster response added or changed before the client asked for any
   * assignment: owed to its first request for them, which may claim them unchanged (Delta, a
   * reconnecting Envoy whose cluster changed meanwhile).
   */
  private Set<String> assignmentsOwed = Set.of();

  /**
   * @param protocol "SotW" or "Delta", for logs
   * @param fixedType the type of a per-type service, empty for ADS
   * @param peer the client's address, for logs
   */
  ClientStream(String protocol, StreamObserver<EncodedResponse> responseObserver, Serving serving,
      Optional<TypeUrl> fixedType, SocketAddress peer) {
    this.responses = (ServerCallStreamObserver<EncodedResponse>) responseObserver;
    this.serving = serving;
    // Interned: a handful of distinct values, held by every stream.
    this.protocol = protocol.toLowerCase(java.util.Locale.ROOT).intern();
    this.service = fixedType.map(TypeUrl::shortName).orElse("ads");
    Executor pool = serving.pool();
    this.fixedType = fixedType;
    this.peer = peer;
    this.variant = (protocol + " " + fixedType.map(TypeUrl::shortName).orElse("ADS")).intern();
    this.executor = new SerialExecutor(pool, this);
    this.requestTokens = 2.0 * serving.limits().requestsPerSecond();
    this.requestTokensAt = serving.clock().millis();
    responses.disableAutoRequest();
    responses.setOnReadyHandler(() -> executor.execute(guarded(this::flushBlocked)));
    responses.setOnCancelHandler(() -> executor.execute(() -> end("cancelled by the client")));
    responses.request(1);
  }

  /** Handles one request, on the executor; the stream is identified and open. */
  abstract void handle(Q request);

  /** The state of {@code type}'s logical stream, made with {@code create} on the type's first request. */
  final S typeStream(TypeUrl type, Function<TypeUrl, S> create) {
    return types.computeIfAbsent(type, t -> new Slot<>(create.apply(t))).state;
  }

  /** The nonce of a response about to be sent. */
  private String nextNonce() {
    return Long.toString(++nonces);
  }

  /** "SotW ADS", "Delta envoy.config.cluster.v3.Cluster", …: for logs. */
  final String variant() {
    return variant;
  }

  /** For logs. */
  @Override
  public String toString() {
    return variant + " stream from " + peer;
  }

  @Override
  public final void onNext(Q request) {
    executor.execute(guarded(() -> {
      if (!closed) {
        handle(request);
        if (!closed) {
          readNext();
        }
      }
    }));
  }

  /**
   * Asks for the next request, now or, past the request rate, when the stream is due one (a token
   * bucket of twice the rate): a client that floods the proxy is read at the rate, whatever it sends.
   */
  private void readNext() {
    int rate = limits().requestsPerSecond();
    if (rate == 0) {
      responses.request(1);
      return;
    }
    long now = serving.clock().millis();
    requestTokens = Math.min(2.0 * rate, requestTokens + (now - requestTokensAt) * rate / 1000.0);
    requestTokensAt = now;
    requestTokens -= 1;
    if (requestTokens >= 0) {
      responses.request(1);
      return;
    }
    long wait = (long) Math.ceil(-requestTokens * 1000.0 / rate);
    if (!paced) {
      paced = true;
      serving.metrics().limited("request_rate");
      refusals.log(fields(), "node '{}' group {}: requests come faster than {} a second; the stream is read at that rate",
          nodeId, group == null ? "?" : group.key(), rate);
    }
    serving.timer().schedule(() -> executor.execute(() -> {
      if (!closed) {
        responses.request(1);
      }
    }), wait, java.util.concurrent.TimeUnit.MILLISECONDS);
  }

  final Limits limits() {
    return serving.limits();
  }

  /**
   * Checks the resource names of a request against the limits: how many it carries ({@code count}),
   * RESOURCE_EXHAUSTED past the maximum, and how long each of {@code names} is, INVALID_ARGUMENT
   * past the maximum. Returns false when the stream was ended for them.
   */
  @SafeVarargs
  final boolean namesWithinLimits(TypeUrl type, int count, java.util.Collection<String>... names) {
    int max = limits().maxNamesPerRequest();
    if (count > max) {
      refuse("names_per_request", Status.RESOURCE_EXHAUSTED, "a request for " + type.shortName() + " names " + count
          + " resources, more than the " + max + " allowed (node '" + nodeId + "'; --max-names-per-request)");
      return false;
    }
    int longest = limits().maxNameLength();
    for (java.util.Collection<String> some : names) {
      for (String name : some) {
        if (name.length() > longest) {
          refuse("name_length", Status.INVALID_ARGUMENT, "a resource name of " + type.shortName() + " is "
              + name.length() + " characters long, more than the " + longest + " allowed: '"
              + name.substring(0, Math.min(64, longest)) + "…' (node '" + nodeId + "'; --max-name-length)");
          return false;
        }
      }
    }
    return true;
  }

  /** Whether a subscription of {@code count} names of {@code type} is within the limit; ends the stream if not. */
  final boolean subscriptionWithinLimits(TypeUrl type, int count) {
    int max = limits().maxNamesPerRequest();
    if (count > max) {
      refuse("names_per_request", Status.RESOURCE_EXHAUSTED, "the stream would be subscribed to " + count + " "
          + type.shortName() + " resources, more than the " + max + " allowed (node '" + nodeId
          + "'; --max-names-per-request)");
      return false;
    }
    return true;
  }

  /** Ends the stream for going past the limit {@code limit} (the metric's label), counted and logged. */
  private void refuse(String limit, Status code, String why) {
    serving.metrics().limited(limit);
    refusals.log(fields(), "refused {} stream from {}: {}", variant, peer, why);
    fail(code.withDescription(why));
  }

  @Override
  public final void onError(Throwable t) {
    executor.execute(() -> end("client error: " + Status.fromThrowable(t)));
  }

  @Override
  public final void onCompleted() {
    executor.execute(() -> {
      if (!closed) {
        responses.onCompleted();
      }
      end("closed by the client");
    });
  }

  @Override
  public final void onSnapshots(List<TypeSnapshot> snapshots) {
    changedBatches.add(snapshots);
    if (changedScheduled.compareAndSet(false, true)) {
      executor.execute(guarded(this::takeChanges));
    }
  }

  /**
   * The type {@code request} is about, once it is found to be a request at all, from the stream's
   * node, of a type the service serves; empty when the stream was ended for it.
   *
   * @param hasNode whether the request carries a node, {@code requestNode}
   */
  final Optional<TypeUrl> typeOf(com.google.protobuf.MessageOrBuilder request, boolean hasNode, Node requestNode,
      String typeUrl) {
    return wellFormed(request) && identify(hasNode, requestNode) ? typeOf(typeUrl) : Optional.empty();
  }

  /** Whether {@code request} is a request at all ({@link InvalidRequest}); ends the stream if not. */
  private boolean wellFormed(com.google.protobuf.MessageOrBuilder request) {
    Optional<String> invalid = InvalidRequest.reason(request);
    invalid.ifPresent(why -> fail(Status.INVALID_ARGUMENT.withDescription(
        why + (node == null ? "" : " (node '" + node.getId() + "')"))));
    return invalid.isEmpty();
  }

  /**
   * Checks the node of a request: the first must carry one, which places the stream in its node
   * group; a later one may leave it out but must not name another node ("Basic Protocol Overview").
   * Returns false when the stream was ended for it.
   */
  private boolean identify(boolean hasNode, Node requestNode) {
    if (node == null) {
      if (!hasNode) {
        fail(Status.INVALID_ARGUMENT.withDescription("the first request on a stream must carry the node"));
        return false;
      }
      Optional<String> refusal = nodeIdCheck.refusal(requestNode.getId());
      if (refusal.isPresent()) {
        fail(Status.PERMISSION_DENIED.withDescription(refusal.get()));
        return false;
      }
      int perNode = limits().maxStreamsPerNode();
      if (!serving.clients().admit(requestNode.getId(), perNode == 0 ? Integer.MAX_VALUE : perNode)) {
        refuse("streams_per_node", Status.RESOURCE_EXHAUSTED, "node '" + requestNode.getId() + "' has " + perNode
            + " streams open already, the most one node may have (--max-streams-per-node)");
        return false;
      }
      admitted = true;
      nodeId = requestNode.getId();
      try {
        group = serving.groups().acquire(requestNode, limits().maxStreamsPerGroup());
      } catch (UngroupableNodeException e) {
        failures.log(fields(), "refused {} stream from {}: {}", variant(), peer, e.getMessage());
        fail(Status.FAILED_PRECONDITION.withDescription(e.getMessage()));
        return false;
      } catch (NodeGroups.GroupFullException e) {
        refuse("streams_per_group", Status.RESOURCE_EXHAUSTED, e.getMessage() + " (node '" + requestNode.getId()
            + "'; --max-streams-per-group)");
        return false;
      }
      node = requestNode;
      serving.metrics().opened(protocol, service);
      serving.clients().opened(this);
      opens.log(fields(), "stream opened: node '{}' group {} from {} ({})", node.getId(), group.key(), peer, variant());
    } else if (hasNode && !requestNode.equals(node)) {
      // "The node identifier should always be identical if present more than once on the stream."
      fail(Status.INVALID_ARGUMENT.withDescription(
          "node changed mid-stream: the stream began as node '" + node.getId() + "', a later request names node '"
              + requestNode.getId() + "'"));
      return false;
    }
    return true;
  }

  /**
   * The type a request is about: its type URL on ADS, the service's type on a per-type service.
   * Returns empty when the stream was ended for a bad type URL.
   */
  private Optional<TypeUrl> typeOf(String typeUrl) {
    try {
      if (fixedType.isEmpty()) {
        return Optional.of(TypeUrl.parse(typeUrl));
      }
      TypeUrl fixed = fixedType.get();
      if (!typeUrl.isEmpty() && !typeUrl.equals(fixed.url())) {
        throw new IllegalArgumentException(
            "type_url " + typeUrl + " sent to the " + fixed.shortName() + " discovery service");
      }
      return fixedType;
    } catch (IllegalArgumentException e) {
      fail(Status.INVALID_ARGUMENT.withDescription(e.getMessage() + " (node '" + node.getId() + "')"));
      return Optional.empty();
    }
  }

  /**
   * What this stream's log lines are about, as far as it is known yet: the client's node, its group
   * and address. A line about one type adds {@link LogFields#type}.
   */
  final LogFields fields() {
    return LogFields.NONE.node(nodeId).group(group == null ? null : group.key()).peer(peer);
  }

  /** Ends the stream with {@code status}, on its executor. */
  final void shutDown(Status status) {
    executor.execute(() -> fail(status));
  }

  /** This stream's status, as told on its executor. */
  final CompletableFuture<Clients.ClientStatus> status() {
    CompletableFuture<Clients.ClientStatus> status = new CompletableFuture<>();
    executor.execute(() -> {
      List<Clients.TypeStatus> byType = new ArrayList<>();
      types.forEach((type, slot) -> byType.add(new Clients.TypeStatus(type.url(),
          slot.state.subscription().wildcard(), slot.state.subscription().names().stream().sorted().toList(),
          slot.state.ackedVersion(), slot.state.lastNackMessage())));
      status.complete(new Clients.ClientStatus(node.getId(), group.key().value(), variant, peer.toString(), byType));
    });
    return status;
  }

  /** What this stream's client holds of each resource it subscribed to, as told on its executor: for CSDS. */
  final CompletableFuture<Clients.ClientResources> resources() {
    CompletableFuture<Clients.ClientResources> resources = new CompletableFuture<>();
    executor.execute(() -> {
      List<ResourceStatus> all = new ArrayList<>();
      types.values().forEach(slot -> all.addAll(slot.state.resourceStatuses()));
      resources.complete(new Clients.ClientResources(node, all));
    });
    return resources;
  }

  /** What a request says of the response it names by nonce. */
  enum Reply {
    /** Names no response, or one that is no longer the latest. */
    NONE,
    ACK,
    NACK;

    /**
     * What a request with {@code nonce} says, {@code answers} whether the nonce is one the variant
     * takes as answering the latest response, {@code errorDetail} whether it carries one.
     */
    static Reply of(boolean answers, String nonce, boolean errorDetail) {
      return !answers || nonce.isEmpty() ? NONE : errorDetail ? NACK : ACK;
    }
  }

  /** Counts a request for {@code type}, and its ACK or NACK. */
  final void counted(TypeUrl type, Reply reply) {
    serving.metrics().request(type);
    switch (reply) {
      case ACK -> serving.metrics().ack(type);
      case NACK -> serving.metrics().nack(type);
      case NONE -> { }
    }
  }

  /** The client NACKed the latest response of {@code state}'s type, whose nonce it names: recorded and logged. */
  final void nacked(S state, String nonce, com.google.rpc.Status errorDetail) {
    state.nack(errorDetail.getMessage());
    nacks.log(fields().type(state.type()), "NACK from node '{}' group {} for {} (nonce {}): {}", node.getId(), group.key(),
        state.type().shortName(), nonce, errorDetail.getMessage());
  }

  final Node node() {
    return node;
  }

  final Clock clock() {
    return serving.clock();
  }

  /**
   * Whether the client announced TTL support ("TTL": {@code xds.config.supports-resource-ttl});
   * for SotW it must also take resources wrapped in {@code Resource}
   * ({@code xds.config.supports-resource-in-sotw}).
   */
  final boolean knowsTtl(boolean sotw) {
    List<String> features = node.getClientFeaturesList();
    return features.contains(ClientFeatures.SUPPORTS_TTL)
        && (!sotw || features.contains(ClientFeatures.SUPPORTS_RESOURCE_IN_SOTW));
  }

  final NodeGroup group() {
    return group;
  }

  /** Writes the response owed for {@code type}, if any, now or when the transport is ready. */
  final void send(TypeUrl type) {
    send(type, false);
  }

  private void send(TypeUrl type, boolean deferRemovals) {
    Slot<S> slot = types.get(type);
    if (closed || slot == null) {
      return;
    }
    if (!responses.isReady()) {
      slot.blocked = true;
      return;
    }
    if (!assignmentsOwed.isEmpty() && type.equals(TypeUrl.ENDPOINT)) {
      slot.state.owe(assignmentsOwed);
      assignmentsOwed = Set.of();
    }
    Optional<EncodedResponse> response = slot.state.respond(deferRemovals, this::nextNonce);
    if (response.isPresent()) {
      serving.metrics().response(type, response.get().size());
      responses.onNext(response.get());
      if (slot.unwritten) {
        serving.metrics().fannedOut(type, System.nanoTime() - slot.unwrittenSince);
        slot.unwritten = false;
      }
      if (type.equals(TypeUrl.CLUSTER)) {
        sendAssignmentsOfWarming(slot.state, deferRemovals);
      }
    } else if (!deferRemovals) {
      slot.unwritten = false; // the update changed nothing this client holds
    }
  }

  /**
   * Rule 18 of interop.md, DESIGN invariant 9: "Warming of Cluster is completed only when a new
   * ClusterLoadAssignment response is supplied … even if there is no change in endpoints" ("Resource
   * warming"). After a Cluster response that added or changed {@code clusters}, the client gets their
   * assignments at once, changed or not: a Delta Envoy asks for none it already subscribes to
   * ({@code WatchMap::findAdditions}), and a SotW Envoy's request for them looks like an ACK. Control
   * planes send them so (istiod {@code forceEDSPush} and full pushes, go-control-plane's snapshot
   * versions, java-control-plane's {@code hasClusterChanged}). Only on ADS, where the two types share
   * one stream and its order; not waiting for the Cluster ACK, which Envoy withholds while a cluster
   * warms ({@code ClusterManagerImpl::updateClusterCounts}).
   */
  private void sendAssignmentsOfWarming(S clustersSent, boolean deferRemovals) {
    Slot<S> endpoints = types.get(TypeUrl.ENDPOINT);
    // Before the client asks for assignments, only those of clusters it held may be claimed unchanged
    // by its first request for them; any other it is sent in full.
    List<XdsResource> clusters = clustersSent.takeWarming(endpoints == null);
    if (clusters.isEmpty() || fixedType.isPresent()) {
      return;
    }
    Set<String> assignments = new HashSet<>();
    for (XdsResource cluster : clusters) {
      ClusterEndpoints.assignmentOf(cluster).ifPresent(assignments::add);
    }
    if (endpoints == null) {
      assignments.addAll(assignmentsOwed);
      assignmentsOwed = Set.copyOf(assignments);
    } else if (!assignments.isEmpty() && endpoints.state.owe(assignments)) {
      send(TypeUrl.ENDPOINT, deferRemovals);
    }
  }

  /**
   * Pushes the changes of {@code types}, given in push order, make-before-break on ADS ("Eventual consistency
   * considerations"): every type's additions and updates first, in push order (CDS, EDS, LDS, RDS,
   * …), and only then what they remove, so that a route never points at a cluster the client has
   * not got, and a cluster is not taken away while a route still points at it.
   */
  private void push(Collection<TypeUrl> types) {
    if (fixedType.isPresent()) {
      types.forEach(this::send);
      return;
    }
    for (TypeUrl type : types) {
      send(type, true);
    }
    for (TypeUrl type : types) {
      send(type, false);
    }
  }

  private void takeChanges() {
    changedScheduled.set(false);
    List<TypeSnapshot> batch = changedBatches.poll();
    if (batch == null || closed) {
      changedBatches.clear();
      return;
    }
    // One type in one batch, what nearly every update is, needs no sorting.
    Collection<TypeUrl> changed = batch.size() == 1 && changedBatches.isEmpty() ? List.of(batch.get(0).type()) : null;
    if (changed == null) {
      SortedSet<TypeUrl> sorted = new TreeSet<>();
      for (; batch != null; batch = changedBatches.poll()) {
        batch.forEach(snapshot -> sorted.add(snapshot.type()));
      }
      changed = sorted;
    }
    for (TypeUrl type : changed) {
      Slot<S> slot = types.get(type);
      if (slot != null) { // else a type this stream's client has not asked for: send passes it by
        TypeSnapshot snapshot = group.snapshot(type);
        slot.state.update(snapshot);
        if (snapshot.isReceived() && !slot.unwritten) {
          slot.unwritten = true;
          slot.unwrittenSince = snapshot.changedAt();
        }
      }
    }
    push(changed);
  }

  private void flushBlocked() {
    if (closed || !responses.isReady()) {
      return;
    }
    SortedSet<TypeUrl> blocked = new TreeSet<>();
    types.forEach((type, slot) -> {
      if (slot.blocked) {
        slot.blocked = false;
        blocked.add(type);
      }
    });
    if (!blocked.isEmpty()) {
      push(blocked);
    }
  }

  /**
   * {@code task}, ending the stream with INTERNAL should it throw: a stream the proxy cannot serve
   * correctly is closed, so its client reconnects, rather than left silent; other streams go on.
   */
  private Runnable guarded(Runnable task) {
    return () -> {
      try {
        task.run();
      } catch (RuntimeException e) {
        errors.log(fields(), "{} stream from {} (node '{}') failed; closing it", variant, peer,
            node == null ? "?" : node.getId(), e);
        fail(Status.INTERNAL.withDescription("xds-proxy failed to serve this stream: " + e));
      }
    };
  }

  /** Ends the stream with {@code status}, logged with the node. */
  final void fail(Status status) {
    if (!closed) {
      failures.log(fields(), "{} stream from {} (node '{}') ended: {}", variant(), peer, node == null ? "?" : node.getId(),
          status.getDescription());
      responses.onError(status.asRuntimeException());
    }
    end(null);
  }

  private void end(String why) {
    if (closed) {
      return;
    }
    closed = true;
    if (admitted) {
      serving.clients().dismiss(nodeId);
    }
    if (group != null) {
      serving.metrics().closed(protocol, service);
      serving.clients().closed(this);
      group.leave(this);
      serving.groups().release(group);
      if (why != null) {
        closes.log(fields(), "stream closed: node '{}' group {} from {}: {}", node.getId(), group.key(), peer, why);
      }
    }
  }
}
