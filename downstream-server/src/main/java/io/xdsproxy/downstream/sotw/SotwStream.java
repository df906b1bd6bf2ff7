package io.xdsproxy.downstream.sotw;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.GroupWatcher;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.NodeGrouping.UngroupableNodeException;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.SerialExecutor;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.sotw.SotwTypeState.Outgoing;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One downstream State-of-the-World stream: ADS (every type multiplexed by type URL) or a per-type
 * service (one fixed type). All state lives on the stream's own {@link SerialExecutor}.
 *
 * <p>Memory stays bounded whatever the client does (DESIGN invariant 8): the client's requests are
 * read one at a time (manual flow control), snapshots from the node group coalesce into the latest
 * per type, and a response is only built when the transport is ready to take it, so a slow client
 * gets the newest state when it catches up, not a backlog.
 */
public final class SotwStream implements StreamObserver<DiscoveryRequest>, GroupWatcher {

  private static final Logger log = LoggerFactory.getLogger(SotwStream.class);

  private final ServerCallStreamObserver<DiscoveryResponse> responses;
  private final NodeGroups groups;
  private final Optional<TypeUrl> fixedType;
  private final SerialExecutor executor;
  private final String peer;

  /**
   * Types the group published a new snapshot of since the executor last looked. Only the type is
   * kept: the executor reads the group's current snapshot, so a stream never goes back in time.
   */
  private final Set<TypeUrl> changedTypes = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean changedScheduled = new AtomicBoolean();

  // Confined to the executor from here on.
  private final Map<TypeUrl, SotwTypeState> types = new TreeMap<>();
  /** Types with a response owed that the transport was not ready for, flushed in push order. */
  private final TreeSet<TypeUrl> blocked = new TreeSet<>();
  private Node node;
  private NodeGroup group;
  private long nonces;
  private boolean closed;

  /**
   * @param fixedType the type of a per-type service, empty for ADS
   * @param peer the client's address, for logs
   */
  public SotwStream(
      StreamObserver<DiscoveryResponse> responseObserver,
      NodeGroups groups,
      Optional<TypeUrl> fixedType,
      Executor pool,
      String peer) {
    this.responses = (ServerCallStreamObserver<DiscoveryResponse>) responseObserver;
    this.groups = groups;
    this.fixedType = fixedType;
    this.peer = peer;
    this.executor = new SerialExecutor(pool, "SotW stream from " + peer);
    responses.disableAutoRequest();
    responses.setOnReadyHandler(() -> executor.execute(this::flushBlocked));
    responses.setOnCancelHandler(() -> executor.execute(() -> end("cancelled by the client")));
    responses.request(1);
  }

  @Override
  public void onNext(DiscoveryRequest request) {
    executor.execute(() -> {
      if (!closed) {
        handle(request);
        responses.request(1);
      }
    });
  }

  @Override
  public void onError(Throwable t) {
    executor.execute(() -> end("client error: " + Status.fromThrowable(t)));
  }

  @Override
  public void onCompleted() {
    executor.execute(() -> {
      if (!closed) {
        responses.onCompleted();
      }
      end("closed by the client");
    });
  }

  @Override
  public void onSnapshot(TypeSnapshot snapshot) {
    changedTypes.add(snapshot.type());
    if (changedScheduled.compareAndSet(false, true)) {
      executor.execute(this::takeChanges);
    }
  }

  private void handle(DiscoveryRequest request) {
    if (node == null) {
      if (!request.hasNode()) {
        fail(Status.INVALID_ARGUMENT.withDescription("the first request on a stream must carry the node"));
        return;
      }
      try {
        group = groups.acquire(request.getNode());
      } catch (UngroupableNodeException e) {
        log.warn("refused stream from {}: {}", peer, e.getMessage());
        fail(Status.FAILED_PRECONDITION.withDescription(e.getMessage()));
        return;
      }
      node = request.getNode();
      log.info("stream opened: node '{}' group {} from {} ({})", node.getId(), group.key(), peer, variant());
    } else if (request.hasNode() && !request.getNode().equals(node)) {
      // "The node identifier should always be identical if present more than once on the stream."
      fail(Status.INVALID_ARGUMENT.withDescription(
          "node changed mid-stream: the stream began as node '" + node.getId() + "', a later request names node '"
              + request.getNode().getId() + "'"));
      return;
    }
    TypeUrl type;
    try {
      type = typeOf(request);
    } catch (IllegalArgumentException e) {
      fail(Status.INVALID_ARGUMENT.withDescription(e.getMessage() + " (node '" + node.getId() + "')"));
      return;
    }
    SotwTypeState state = types.computeIfAbsent(type, t -> new SotwTypeState(t, group.snapshot(t)));
    if (!state.isCurrent(request.getResponseNonce())) {
      log.debug("node '{}' {}: ignoring request with stale nonce {}", node.getId(), type.shortName(), request.getResponseNonce());
      return;
    }
    if (request.hasErrorDetail()) {
      state.nack(request.getErrorDetail().getMessage());
      log.warn("NACK from node '{}' group {} for {} (nonce {}): {}",
          node.getId(), group.key(), type.shortName(), request.getResponseNonce(), request.getErrorDetail().getMessage());
    } else if (!request.getResponseNonce().isEmpty()) {
      state.ack(request.getVersionInfo());
    }
    if (state.subscribe(request.getResourceNamesList())) {
      group.subscribe(this, type, state.subscription().interest());
    }
    state.update(group.snapshot(type));
    send(state);
  }

  private TypeUrl typeOf(DiscoveryRequest request) {
    if (fixedType.isEmpty()) {
      return TypeUrl.parse(request.getTypeUrl());
    }
    TypeUrl fixed = fixedType.get();
    if (!request.getTypeUrl().isEmpty() && !request.getTypeUrl().equals(fixed.url())) {
      throw new IllegalArgumentException(
          "type_url " + request.getTypeUrl() + " sent to the " + fixed.shortName() + " discovery service");
    }
    return fixed;
  }

  private void takeChanges() {
    changedScheduled.set(false);
    for (TypeUrl type : new TreeSet<>(changedTypes)) {
      changedTypes.remove(type);
      SotwTypeState state = types.get(type);
      if (state != null && !closed) {
        state.update(group.snapshot(type));
        send(state);
      }
    }
  }

  private void send(SotwTypeState state) {
    if (!responses.isReady()) {
      blocked.add(state.type());
      return;
    }
    Optional<Outgoing> outgoing = state.nextResponse();
    if (outgoing.isEmpty()) {
      return;
    }
    String nonce = Long.toString(++nonces);
    responses.onNext(
        DiscoveryResponse.newBuilder()
            .setVersionInfo(outgoing.get().snapshot().version())
            .setTypeUrl(state.type().url())
            .addAllResources(outgoing.get().resources())
            .setNonce(nonce)
            .build());
    state.sent(outgoing.get(), nonce);
  }

  private void flushBlocked() {
    while (!closed && !blocked.isEmpty() && responses.isReady()) {
      send(types.get(blocked.pollFirst()));
    }
  }

  private void fail(Status status) {
    if (!closed) {
      log.warn("stream from {} (node '{}') ended: {}", peer, node == null ? "?" : node.getId(), status.getDescription());
      responses.onError(status.asRuntimeException());
    }
    end(null);
  }

  private void end(String why) {
    if (closed) {
      return;
    }
    closed = true;
    if (group != null) {
      group.leave(this);
      groups.release(group);
      if (why != null) {
        log.info("stream closed: node '{}' group {} from {}: {}", node.getId(), group.key(), peer, why);
      }
    }
  }

  private String variant() {
    return fixedType.map(type -> "SotW " + type.shortName()).orElse("SotW ADS");
  }
}
