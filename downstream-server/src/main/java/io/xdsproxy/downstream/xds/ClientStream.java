package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.ClientStrings;
import io.xdsproxy.core.GroupWatcher;
import io.xdsproxy.core.LogFields;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.SerialExecutor;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.WorkLanes;
import java.io.InputStream;
import java.net.SocketAddress;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * What every downstream xDS stream does, whatever its variant: its lifecycle and the dispatch of
 * its requests. It learns the client's node from the first request and holds its node group once
 * {@link Admission} lets it, reads requests one at a time at the rate {@link RequestPacer} allows,
 * hears of new snapshots, and leaves what to write when to {@link PushScheduler}; what happens is
 * told to {@link StreamEvents}, for metrics and logs. {@link SotwStream} and {@link DeltaStream}
 * add the protocol, each type's logical stream a {@link TypeState}. All state lives on the stream's
 * own {@link SerialExecutor}, which the confined entry points assert.
 *
 * <p>Memory stays bounded whatever the client does (DESIGN invariant 8): requests are read one at a
 * time (manual flow control), snapshots from the node group coalesce into "this type changed", and
 * a response is only built when the transport is ready to take it, so a slow client gets the newest
 * state when it catches up, not a backlog.
 *
 * @param <Q> the request message
 * @param <S> the state of one type's logical stream in the variant
 */
abstract class ClientStream<Q extends com.google.protobuf.Message, S extends TypeState<?>>
    implements StreamObserver<InputStream>, GroupWatcher {

  /** The variant's protocol name, as the services register it in metrics. */
  static final String SOTW = "SotW";

  static final String DELTA = "Delta";

  private final StreamRequests<Q> requests;
  private final ServerCallStreamObserver<EncodedResponse> responses;

  /** The node groups, registry of streams, clock, timer and limits every stream shares. */
  private final ServerContext serving;

  /** Where this stream's metrics and log lines go. */
  private final StreamEvents events;

  /** For metrics: "sotw" or "delta", and "ads" or the type of a per-type service. */
  private final String protocol;

  private final String service;
  private final Optional<TypeUrl> fixedType;
  private final SerialExecutor executor;
  private final SocketAddress peer;
  private final String variant;

  /**
   * The worker pool's lane ({@link WorkLanes}) of the stream's work: the initial lane until its
   * client has answered a first response of every type it asked for ({@link
   * PushScheduler#awaitsFirstState}), so that a storm of newcomers does not delay updates to the
   * streams already served. Moved on the executor, read by whoever hands it work; a task that reads
   * it stale only runs in the other lane once. It also keeps what the call's last request's names
   * were read as, for the next.
   */
  private final StreamLane lane;

  // Confined to the executor from here on.
  private final PushScheduler<S> pushes;
  private final RequestPacer pacer;

  /** Who the client is and which group it is a member of, once its first request says. */
  private final StreamMembership member;

  private boolean closed;

  /**
   * Made on the call's thread, where gRPC's context tells the client's address and certificate.
   *
   * @param requests how the variant's requests say who and what they are about
   * @param fixedType the type of a per-type service, empty for ADS
   */
  ClientStream(
      StreamRequests<Q> requests,
      StreamObserver<EncodedResponse> responseObserver,
      ServerContext serving,
      Optional<TypeUrl> fixedType) {
    this.requests = requests;
    String protocol = requests.protocol();
    SocketAddress peer = PeerInterceptor.currentPeer();
    this.responses = (ServerCallStreamObserver<EncodedResponse>) responseObserver;
    this.serving = serving;
    this.events = serving.events();
    // Interned: a handful of distinct values, held by every stream.
    this.protocol = protocol.toLowerCase(java.util.Locale.ROOT).intern();
    this.service = fixedType.map(TypeUrl::shortName).orElse("ads");
    this.fixedType = fixedType;
    this.peer = peer;
    this.variant = (protocol + " " + fixedType.map(TypeUrl::shortName).orElse("ADS")).intern();
    this.lane = new StreamLane(serving.pool());
    // Its standing task takes the group's changes: the group signals it (onSnapshots).
    this.executor = new SerialExecutor(lane, this, guarded(this::takeChanges));
    this.pushes = new PushScheduler<>(new CallTransport(this, responses), fixedType.isEmpty());
    this.pacer =
        new RequestPacer(
            serving.limits().requestsPerSecond(),
            serving.clock(),
            (task, millis) ->
                serving
                    .timer()
                    .schedule(() -> executor.execute(task), millis, TimeUnit.MILLISECONDS),
            rate -> events.paced(this, rate));
    // What the client's connection proved is in the gRPC context on the call's thread, here.
    this.member = new StreamMembership(this, serving, PeerInterceptor.currentIdentity());
    responses.disableAutoRequest();
    responses.setOnReadyHandler(() -> executor.execute(guarded(this::flushBlocked)));
    responses.setOnCancelHandler(() -> executor.execute(() -> end("cancelled by the client")));
    responses.request(1);
  }

  /**
   * Handles one request for {@code type}, whose logical stream is {@code state}, on the executor;
   * the stream is identified and open.
   */
  abstract void handle(Q request, TypeUrl type, S state);

  /** The state of {@code type}'s logical stream, made on the type's first request. */
  abstract S newTypeState(TypeUrl type);

  /**
   * Handles one request once it is found to be a request at all, from the stream's node, of a type
   * the service serves; the stream is ended if not.
   */
  private void handle(Q request) {
    executor.assertCurrent();
    if (wellFormed(request)
        && member.identify(requests.hasNode().test(request), requests.node().apply(request))) {
      String typeUrl = requests.typeUrl().apply(request);
      TypeUrl type;
      try {
        type = RequestedType.of(typeUrl, fixedType);
      } catch (IllegalArgumentException e) {
        fail(
            Status.INVALID_ARGUMENT.withDescription(
                e.getMessage() + " (node '" + node().getId() + "')"));
        return;
      }
      if (member.entitledTo(type)) {
        lane.asked(typeUrl);
        handle(request, type, pushes.state(type, this::newTypeState));
      }
    }
  }

  /** "SotW ADS", "Delta envoy.config.cluster.v3.Cluster", …: for logs. */
  final String variant() {
    return variant;
  }

  /** For metrics: "sotw" or "delta". */
  final String protocol() {
    return protocol;
  }

  /** For metrics: "ads" or the type of a per-type service. */
  final String service() {
    return service;
  }

  /** Where this stream's metrics and log lines go. */
  final StreamEvents events() {
    return events;
  }

  /** The client's address, for logs. */
  final SocketAddress peer() {
    return peer;
  }

  /** For logs. */
  @Override
  public String toString() {
    return variant + " stream from " + peer;
  }

  /**
   * Reads a request where gRPC hands it over, on its connection's event loop (the server's executor
   * is direct), and has it handled. The first request of a type is a newcomer's work even on a
   * stream whose client holds the types it asked for before: clients ask for a type only once they
   * hold what names it (a gRPC client asks for the assignments of the clusters it was sent after it
   * ACKed them, an Envoy for its listeners once its clusters are warm), and the request names
   * everything of its type the client needs (a SotW assignments request every cluster). Handled in
   * the change lane, a storm's second types were queued ahead of the updates to the streams already
   * served; so it waits in the initial lane, as does every request of a stream that awaits its
   * first states. Any other request that costs little to handle ({@link #light}), as every ACK of
   * an established client does, is handled on the event loop there and then if the stream's
   * executor has nothing else to run: handing it to a worker would cost the event loop a wake-up of
   * that worker, and the worker a wait and a wake-up, more than the handling itself (RESULTS,
   * "Requests handled where they are read").
   */
  @Override
  public final void onNext(InputStream received) {
    RequestMarshaller.Decoded<?> namesBefore = lane.lastNames();
    Q request;
    try {
      request = requests.marshaller().read(received, lane);
    } catch (StatusRuntimeException unreadable) {
      executor.execute(() -> fail(unreadable.getStatus()));
      return;
    }
    boolean firstOfItsType = lane.firstRequestRead(requests.typeUrl().apply(request));
    Runnable handling =
        guarded(
            () -> {
              try {
                if (!closed) {
                  handle(request);
                  if (!closed) {
                    readNext();
                  }
                }
              } finally {
                if (firstOfItsType) {
                  lane.firstRequestHandled();
                }
                laneChange();
              }
            });
    if (!firstOfItsType && !lane.initial() && light(request, namesBefore)) {
      executor.executeHere(handling);
    } else {
      executor.execute(handling);
    }
  }

  /**
   * Whether handling {@code request}, not its type's first, costs little: it holds few names, or
   * the many its call's last request held ({@code namesBefore}, which the marshaller found it
   * repeats). Such a request changes no subscription beyond a few names: it is an ACK, a NACK, or a
   * small change, and what it may write is built from encodings the stream's group shares.
   */
  private boolean light(Q request, RequestMarshaller.Decoded<?> namesBefore) {
    RequestMarshaller.Decoded<?> names = lane.lastNames();
    return names == null
        ? requests.names().applyAsInt(request) < RequestMarshaller.MANY_NAMES
        : names == namesBefore;
  }

  /** Moves the stream's work to the lane it belongs in now, if that changed. */
  private void laneChange() {
    lane.initial(pushes.awaitsFirstState() && !closed);
  }

  /**
   * Asks for the next request, now or, past the request rate, when the stream is due one ({@link
   * RequestPacer}).
   */
  private void readNext() {
    pacer.next(
        () -> {
          if (!closed) {
            responses.request(1);
          }
        });
  }

  /** Who the client is and what it may ask: its requests' names are checked there. */
  final StreamMembership member() {
    return member;
  }

  @Override
  public final void onError(Throwable t) {
    executor.execute(() -> end("client error: " + Status.fromThrowable(t)));
  }

  @Override
  public final void onCompleted() {
    executor.execute(
        () -> {
          if (!closed) {
            responses.onCompleted();
          }
          end("closed by the client");
        });
  }

  /**
   * The group published snapshots: the executor is signalled to take them. What changed is not
   * kept: the executor compares the group's current snapshots with its states' ({@link
   * PushScheduler#catchUp}), so types that changed together are pushed together, and a stream keeps
   * nothing per update but its states.
   */
  @Override
  public final void onSnapshots(List<TypeSnapshot> snapshots) {
    executor.signal();
  }

  /**
   * The group refused a subscription of this stream, which would take what it asks of its upstream
   * past its bound: the stream ends, on its executor.
   */
  @Override
  public final void onRefused(NodeGroups.GroupFullException refusal) {
    executor.execute(
        () -> {
          if (!closed) {
            member.refused(refusal);
          }
        });
  }

  /**
   * Whether {@code request} is a request at all ({@link InvalidRequest}); ends the stream if not.
   */
  private boolean wellFormed(com.google.protobuf.MessageOrBuilder request) {
    Optional<String> invalid = InvalidRequest.reason(request);
    invalid.ifPresent(
        why ->
            fail(
                Status.INVALID_ARGUMENT.withDescription(
                    why + (node() == null ? "" : " (node '" + node().getId() + "')"))));
    return invalid.isEmpty();
  }

  /**
   * What this stream's log lines are about, as far as it is known yet: the client's node, its group
   * and address. A line about one type adds {@link LogFields#type}.
   */
  final LogFields fields() {
    NodeGroup group = member.group();
    return LogFields.NONE
        .node(member.nodeId())
        .group(group == null ? null : group.key())
        .peer(peer);
  }

  /** Ends the stream with {@code status}, on its executor. */
  final void shutDown(Status status) {
    executor.execute(() -> fail(status));
  }

  /**
   * What {@code reading} makes of this stream's types' states, read on its executor, where nothing
   * changes them meanwhile: for {@link Clients}.
   */
  final <T> CompletableFuture<T> report(Function<List<? extends TypeState<?>>, T> reading) {
    CompletableFuture<T> report = new CompletableFuture<>();
    executor.execute(
        () -> {
          List<S> states = new ArrayList<>();
          pushes.forEach((type, state) -> states.add(state));
          report.complete(reading.apply(states));
        });
    return report;
  }

  /**
   * Counts a request for {@code type}, and its ACK or NACK; either says the client holds a first
   * state of the type ({@link PushScheduler#awaitsFirstState}).
   */
  final void counted(TypeUrl type, Reply reply) {
    events.request(this, type, reply);
    if (reply != Reply.NONE) {
      pushes.replied(type);
    }
  }

  /** The request names a response that is no longer the latest: ignored, and logged. */
  final void stale(TypeUrl type, String nonce) {
    events.stale(this, type, nonce);
  }

  /**
   * The most characters of a NACK's message that are kept (for client status) and logged: Envoy's
   * name the resources it rejected and why, and the first few KiB say what an operator needs; a
   * client must not make each of its types keep, and each NACK log, megabytes.
   */
  static final int MAX_NACK_MESSAGE = 4096;

  /**
   * The client NACKed the latest response of {@code state}'s type, whose nonce it names: recorded
   * and logged, its message cut to {@link #MAX_NACK_MESSAGE} characters.
   */
  final void nacked(S state, String nonce, com.google.rpc.Status errorDetail) {
    String message = ClientStrings.bounded(errorDetail.getMessage(), MAX_NACK_MESSAGE);
    state.nack(message);
    events.nacked(this, state.type(), nonce, message);
  }

  final Node node() {
    return member.node();
  }

  /** The node id, once the first request named it: for logs. */
  final String nodeId() {
    return member.nodeId();
  }

  final Clock clock() {
    return serving.clock();
  }

  final NodeGroup group() {
    return member.group();
  }

  /**
   * Writes the response owed for {@code type}, whose request was just handled, if any, now or when
   * the transport is ready. If the group published changes the stream has not pushed yet, of this
   * type or others, they go out as a push sends them, with {@code type}'s response in the same
   * round: in push order, make-before-break. Else a request that races an update (an ACK read just
   * before the update reached the stream) would send the update otherwise than a push does: its
   * type's new state ahead of other types' additions it may point at, or removals in the same
   * response as the additions that replace them, where a push sends them after.
   */
  final void send(TypeUrl type) {
    executor.assertCurrent();
    if (!closed) {
      NodeGroup group = member.group();
      if (pushes.behind(group::snapshot)) {
        pushes.catchUpWith(type, group::snapshot);
        laneChange();
      } else {
        pushes.send(type);
      }
    }
  }

  private void takeChanges() {
    executor.assertCurrent();
    if (!closed) {
      pushes.catchUp(member.group()::snapshot);
      laneChange();
    }
  }

  private void flushBlocked() {
    if (!closed) {
      pushes.flushBlocked();
      laneChange();
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
        events.crashed(this, e);
        fail(Status.INTERNAL.withDescription("xds-proxy failed to serve this stream: " + e));
      }
    };
  }

  /** Ends the stream with {@code status}, logged with the node. */
  final void fail(Status status) {
    if (!closed) {
      events.failed(this, status);
    }
    close(status);
  }

  /** Ends the stream with {@code status}, logged already. */
  final void close(Status status) {
    if (!closed) {
      responses.onError(status.asRuntimeException());
    }
    end(null);
  }

  private void end(String why) {
    executor.assertCurrent();
    if (closed) {
      return;
    }
    closed = true;
    member.leave(why);
  }
}
