package io.xdsproxy.upstream.grpc;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.LimitedLog;
import io.xdsproxy.core.LogFields;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.SerialExecutor;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource.UpstreamListener;
import io.xdsproxy.core.UpstreamSource.UpstreamSession;
import io.xdsproxy.core.XdsResource;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * What one node group's ADS session with the control plane does whatever its variant: keep one
 * stream open, reopening it with backoff when it fails; track per type what the group wants, what
 * the upstream was asked for on the current stream, and what it has sent; drop from the store what
 * the upstream is no longer asked for; and take a name the upstream never answers for not to exist
 * after the not-found timeout. {@link SotwUpstreamSession} and {@link DeltaUpstreamSession} add the
 * protocol.
 *
 * <p>The store mirrors what the upstream believes the group subscribes to (DESIGN, "Data flow"),
 * not what the group's clients want at the moment: a subscription the protocol cannot take back (a
 * wildcard; in SotW, the last names of a type, since an empty list means "everything" to
 * java-control-plane and "nothing" or "wildcard" to others) stays asked for, and its resources stay
 * in the store and up to date, so a client that comes back is served at once. Nothing here relies
 * on the upstream reading {@code version_info}, which istiod never does (interop.md rules 5 to 14).
 *
 * <p>All state is confined to the session's {@link SerialExecutor}; gRPC callbacks and timers only
 * enqueue onto it.
 *
 * @param <Q> the request message
 * @param <R> the response message
 * @param <S> the per-type state of the variant
 */
abstract class AdsSession<Q, R, S extends SubscriptionState> implements UpstreamSession {

  private static final Logger log = LoggerFactory.getLogger(AdsSession.class);
  // A control plane that fails or misbehaves does so for every group at once: the lines are
  // limited.
  private static final LimitedLog limitedWarnings = LimitedLog.of(log, Level.WARN);
  private static final LimitedLog streamEnds = LimitedLog.of(log, Level.WARN);
  private static final LimitedLog notFound = LimitedLog.of(log, Level.INFO);

  final NodeGroupKey group;

  /** How the variant's stream is started. */
  private final AdsCall<Q, R> call;

  final Node node;

  /** Who opened the group: whose turns its streams take at {@link StreamStarts}. */
  private final String tenant;

  private final SessionContext context;

  /** Where the current or next stream goes: an index into the context's targets. */
  private int targetIndex;

  private String target;
  private final UpstreamListener listener;
  private final SerialExecutor executor;

  /** The session's counters and gauge. */
  private final SessionMeters meters;

  // Confined to the executor.
  private final Map<TypeUrl, S> types = new TreeMap<>();
  private ClientCallStreamObserver<Q> stream;

  /** The next stream's turn, while it waits for one ({@link StreamStarts}). */
  private StreamStarts.Waiting waitingToStart;

  /** Counts streams, so callbacks of an abandoned stream are told apart and ignored. */
  private int generation;

  private int failedAttempts;
  private boolean closed;

  AdsSession(
      NodeGroupKey group,
      Node node,
      String tenant,
      UpstreamListener listener,
      SessionContext context,
      AdsCall<Q, R> call) {
    this.call = call;
    this.group = group;
    this.node = node;
    this.tenant = tenant;
    this.target = context.targets().get(0);
    this.context = context;
    this.listener = listener;
    this.executor = new SerialExecutor(context.pool(), "upstream session of group " + group);
    this.meters = new SessionMeters(group, context.meters());
    executor.execute(this::openStream);
  }

  /** A new, empty state for {@code type}. */
  abstract S newTypeState(TypeUrl type);

  /**
   * A new stream is open: forget per-stream state and send each type's {@link
   * SubscriptionState#wire}.
   */
  abstract void streamOpened(Iterable<S> types);

  /**
   * What the stream can be asked for of {@code type} when the group wants {@code interest} and the
   * stream was asked for {@code wire}: {@code interest}, but for what the variant cannot take back
   * on a stream.
   */
  abstract Interest expressible(TypeUrl type, Interest interest, Interest wire);

  /**
   * {@code state}'s {@link SubscriptionState#wire} changed from {@code previous}; tell the
   * upstream.
   */
  abstract void wireChanged(S state, Interest previous);

  /** A response arrived on the current stream. */
  abstract void onResponse(R response);

  /**
   * Asks the upstream to send {@code state}'s {@link SubscriptionState#awaitingFresh} again,
   * unchanged or not, with requests every modelled control plane answers one of; if none does,
   * {@link #refetch} falls back to a new stream.
   */
  abstract void askAgain(S state);

  @Override
  public final void updateInterest(TypeUrl type, Interest interest) {
    executor.execute(
        () -> {
          if (closed) {
            return;
          }
          S state = types.computeIfAbsent(type, this::newTypeState);
          Interest previous = state.interest;
          state.interest = interest;
          for (String name : interest.names()) {
            if (!previous.names().contains(name) && !state.received.contains(name)) {
              armNotFoundTimer(state, name);
            }
          }
          rewire(state);
        });
  }

  /**
   * Asks the upstream for what {@code state}'s type should now be subscribed to, if that changed.
   */
  private void rewire(S state) {
    Interest previousWire = state.wire;
    Interest wanted = upstreamInterest(state);
    state.wire = expressible(state.type, wanted, previousWire);
    if (!state.wire.equals(previousWire)) {
      forgetWhatLeftTheWire(state, previousWire);
      wireChanged(state, previousWire);
    }
    if (wanted != state.interest) {
      Set<String> unreferenced = new HashSet<>(state.interest.names());
      unreferenced.removeAll(wanted.names());
      if (!unreferenced.isEmpty()) {
        publish(state, ResourceUpdate.partial(state.type, List.of(), unreferenced, false));
      }
    }
  }

  /**
   * What the upstream is asked for of {@code state}'s type ({@link
   * SubscriptionState#upstreamInterest}).
   */
  private Interest upstreamInterest(S state) {
    return state.upstreamInterest(types.get(TypeUrl.CLUSTER));
  }

  /**
   * Invariant 3: a client came for do_not_cache resources the store holds, which it may not be
   * served from there. The upstream is asked to send them again; should it not within the not-found
   * timeout (a request shape it ignores), a new stream asks, which every control plane answers in
   * full.
   */
  @Override
  public final void refetch(TypeUrl type) {
    executor.execute(
        () -> {
          S state = types.get(type);
          if (closed || state == null) {
            return;
          }
          state.decoded.values().stream()
              .filter(XdsResource::doNotCache)
              .map(XdsResource::name)
              .forEach(state.awaitingFresh::add);
          if (state.awaitingFresh.isEmpty() || !isStreamOpen()) {
            return; // nothing to ask again, or the next stream's first request asks for everything
          }
          askAgain(state);
          int streamGeneration = generation;
          later(
              context.notFoundTimeout(),
              () -> {
                if (!closed
                    && streamGeneration == generation
                    && isStreamOpen()
                    && !state.awaitingFresh.isEmpty()) {
                  reopenStream(
                      "the upstream did not resend "
                          + state.type.shortName()
                          + " "
                          + new TreeSet<>(state.awaitingFresh)
                          + " (do_not_cache) when asked again");
                }
              });
        });
  }

  @Override
  public final void close() {
    executor.execute(
        () -> {
          closed = true;
          if (waitingToStart != null) {
            waitingToStart.withdraw();
            waitingToStart = null;
          }
          meters.remove();
          if (stream != null) {
            stream.cancel("node group " + group + " closed", null);
            stream = null;
          }
        });
  }

  /** The state of {@code type}, if the group ever wanted it. */
  final Optional<S> typeState(TypeUrl type) {
    return Optional.ofNullable(types.get(type));
  }

  final boolean isStreamOpen() {
    return stream != null;
  }

  /** Sends {@code request} on the current stream, if one is open. */
  final void send(Q request) {
    if (stream != null) {
      stream.onNext(request);
    }
  }

  /**
   * Abandons the current stream for a new one at once: what the group needs cannot be asked for on
   * it. The last resort, counted, since the upstream then sends the group everything again.
   */
  final void reopenStream(String why) {
    fields()
        .addTo(log.atInfo())
        .log("group {}: reopening the stream to {}: {}", group, target, why);
    meters.abandoned();
    // The abandoned stream's end (CANCELLED, once the cancel has gone round) is not a failure: no
    // backoff, no failover, and no reconnect of its own besides the stream opened here.
    generation++;
    if (stream != null) {
      stream.cancel(why, null);
      stream = null;
    }
    openStream();
  }

  /**
   * Passes {@code update} to the group's store, keeping {@link SubscriptionState#received} in step.
   * The assignments asked for are worked out again only when the update changed a cluster: a SotW
   * control plane resends every cluster with each change of anything (java-control-plane's snapshot
   * has one version), and the decoder hands back the very object held for a cluster that came again
   * unchanged.
   *
   * @return {@link SubscriptionState#decodedEdits} once {@code update} is applied, before the group
   *     is told of it (which may change what the session holds again)
   */
  final long publish(S state, ResourceUpdate update) {
    if (update.replaceAll()) {
      state.received.clear();
    }
    state.received.removeAll(update.removed());
    state.received.removeAll(update.forgotten());
    state.awaitingFresh.removeAll(update.removed());
    state.awaitingFresh.removeAll(update.forgotten());
    boolean changed = state.decoded.keySet().removeAll(update.removed());
    changed |= state.decoded.keySet().removeAll(update.forgotten());
    for (XdsResource resource : update.resources()) {
      state.received.add(resource.name());
      changed |= state.decoded.put(resource.name(), resource) != resource;
      state.awaitingFresh.remove(resource.name());
    }
    if (update.replaceAll() && state.decoded.size() != update.resources().size()) {
      // Names the update leaves out are gone (a response's names are unique).
      state.decoded.keySet().retainAll(state.received);
      changed = true;
    }
    long edits = changed ? ++state.decodedEdits : state.decodedEdits;
    listener.onUpdate(update);
    if (changed && state.type.equals(TypeUrl.CLUSTER)) {
      typeState(TypeUrl.ENDPOINT).ifPresent(this::rewire);
    }
    return edits;
  }

  /** A response was applied: the stream works, so the next failure starts the backoff afresh. */
  final void healthy() {
    failedAttempts = 0;
    meters.connected(true);
  }

  /**
   * The error detail of a NACK, naming what was rejected and why, for the control plane's operator.
   */
  static com.google.rpc.Status rejection(TypeUrl type, String what, String why) {
    return com.google.rpc.Status.newBuilder()
        .setCode(Status.Code.INVALID_ARGUMENT.value())
        .setMessage(type.shortName() + " " + what + " rejected by xds-proxy: " + why)
        .build();
  }

  /** Logs a NACK of {@code type} sent upstream. */
  final void logNack(TypeUrl type, com.google.rpc.Status detail) {
    meters.nacked();
    limitedWarnings.log(
        fields().type(type),
        "group {}: NACK to upstream {}: {}",
        group,
        target,
        detail.getMessage());
  }

  /**
   * What this session's log lines are about: the node it is upstream and its group, and the control
   * plane's address it is on (or will be); a line about one type adds {@link LogFields#type}.
   */
  private LogFields fields() {
    return LogFields.NONE.node(node.getId()).group(group).peer(target);
  }

  /** The type a response names, if the session asked for it; logged and empty otherwise. */
  final Optional<S> stateOfResponse(String typeUrl) {
    TypeUrl type;
    try {
      type = TypeUrl.parse(typeUrl);
    } catch (IllegalArgumentException e) {
      limitedWarnings.log(
          fields(),
          "group {}: upstream {} sent a response with a bad type_url, ignored: {}",
          group,
          target,
          e.getMessage());
      return Optional.empty();
    }
    S state = types.get(type);
    if (state == null) {
      limitedWarnings.log(
          fields().type(type),
          "group {}: upstream {} sent {} which the proxy never asked for; ignored",
          group,
          target,
          type);
    }
    return Optional.ofNullable(state);
  }

  /**
   * Opens a new stream when its turn comes ({@link StreamStarts}): a session's first and every
   * reconnect wait their turn, its tenant's, the last good state served meanwhile.
   */
  private void openStream() {
    if (closed || waitingToStart != null) {
      return;
    }
    waitingToStart = context.starts().start(tenant, () -> executor.execute(this::startStream));
  }

  private void startStream() {
    waitingToStart = null;
    if (closed) {
      return;
    }
    int streamGeneration = ++generation;
    target = context.targets().get(targetIndex);
    call.start(
        context.channels().get(targetIndex),
        executor,
        requests -> stream = requests,
        response -> {
          if (streamGeneration == generation && !closed) {
            onResponse(response);
          }
        },
        status -> onStreamEnd(streamGeneration, status));
    for (S state : types.values()) {
      Interest previousWire = state.wire;
      // A new stream has been asked nothing: what could not be taken back on the old one can be
      // now.
      state.wire = expressible(state.type, upstreamInterest(state), Interest.NONE);
      forgetWhatLeftTheWire(state, previousWire);
    }
    streamOpened(types.values());
  }

  private void onStreamEnd(int streamGeneration, Status status) {
    if (streamGeneration != generation || closed) {
      return;
    }
    stream = null;
    failedAttempts++;
    meters.reconnected();
    Duration delay = context.backoff().delay(failedAttempts, context.random());
    // Failover: the next stream goes to the control plane's next address, round the list.
    targetIndex = (targetIndex + 1) % context.targets().size();
    streamEnds.log(
        fields(),
        "group {}: upstream stream to {} ended ({}: {}); reconnecting to {} in {} ms, the last good state"
            + " is served meanwhile",
        group,
        target,
        status.getCode(),
        status.getDescription(),
        context.targets().get(targetIndex),
        delay.toMillis());
    later(delay, this::openStream);
  }

  /**
   * Runs {@code task} on the session's executor after {@code delay}; nothing is left to do when the
   * proxy is shutting down.
   */
  private void later(Duration delay, Runnable task) {
    if (!context.later(executor, delay, task)) {
      fields()
          .addTo(log.atDebug())
          .log("group {}: not scheduled, the proxy is shutting down", group);
    }
  }

  /**
   * Drops from the store what the upstream is no longer asked for: it will not send changes to it.
   * What it still is asked for stays, wanted by a client or not.
   */
  private void forgetWhatLeftTheWire(S state, Interest previousWire) {
    if (state.wire.wildcard()) {
      return;
    }
    Set<String> unwanted =
        new HashSet<>(previousWire.wildcard() ? state.received : previousWire.names());
    unwanted.removeAll(state.wire.names());
    if (!unwanted.isEmpty()) {
      publish(state, ResourceUpdate.forget(state.type, unwanted));
    }
  }

  /**
   * "Knowing When a Requested Resource Does Not Exist": the spec's client-side timeout, kept for
   * the group.
   */
  private void armNotFoundTimer(S state, String name) {
    later(
        context.notFoundTimeout(),
        () -> {
          if (!closed && state.interest.names().contains(name) && !state.received.contains(name)) {
            notFound.log(
                fields().type(state.type),
                "group {}: upstream {} has not sent {} '{}' within {}; it is taken not to exist",
                group,
                target,
                state.type.shortName(),
                name,
                context.notFoundTimeout());
            publish(state, ResourceUpdate.partial(state.type, List.of(), Set.of(name), false));
          }
        });
  }
}
