package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.ClusterEndpoints;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * When a stream writes what: the types its client asked for, each a {@link TypeState}, pushed in
 * make-before-break order when they change, and only when the transport can take a response (gRPC
 * flow control, {@code isReady}): a response owed to a transport that is not ready is marked, and
 * built when it is, from the newest state, so a slow client gets no backlog (DESIGN invariant 8).
 * Confined to the stream's executor.
 *
 * @param <S> the state of one type's logical stream in the variant
 */
final class PushScheduler<S extends TypeState<?>> {

  /** Where responses go: the stream's transport, and what it counts of them. */
  interface Transport {
    /** Whether a response written now would be taken without buffering. */
    boolean isReady();

    void write(TypeUrl type, EncodedResponse response);

    /** The response just written carried an update that reached the proxy at {@code receivedAt}. */
    void fannedOut(TypeUrl type, long receivedAt);
  }

  /** One type's logical stream, and what the transport owes it. */
  private static final class Slot<S> {
    final S state;

    /**
     * A response is owed that the transport was not ready for: flushed, in push order, when it is.
     */
    boolean blocked;

    /**
     * An update the client has not been written yet, and when it reached the proxy: for the fan-out
     * latency.
     */
    boolean unwritten;

    long unwrittenSince;

    /**
     * The client answered a response of this type (ACK or NACK): it holds a first state of it, and
     * what it asks next is an established client's work.
     */
    boolean settled;

    Slot(S state) {
      this.state = state;
    }
  }

  private final Transport transport;

  /**
   * Whether every type shares this stream (ADS), so the order between types is the proxy's to keep.
   */
  private final boolean ads;

  /** The types the client asked for, in push order. */
  private final TreeMap<TypeUrl, Slot<S>> types = new TreeMap<>();

  private long nonces;

  /** Types asked for whose client has answered no response yet ({@link #awaitsFirstState}). */
  private int unsettled;

  /**
   * Assignments of clusters a Cluster response added or changed before the client asked for any
   * assignment: owed to its first request for them, which may claim them unchanged (Delta, a
   * reconnecting Envoy whose cluster changed meanwhile).
   */
  private Set<String> assignmentsOwed = Set.of();

  PushScheduler(Transport transport, boolean ads) {
    this.transport = transport;
    this.ads = ads;
  }

  /**
   * The state of {@code type}'s logical stream, made with {@code create} on the type's first
   * request.
   */
  S state(TypeUrl type, Function<TypeUrl, S> create) {
    Slot<S> slot = types.get(type);
    if (slot == null) {
      slot = new Slot<>(create.apply(type));
      types.put(type, slot);
      unsettled++;
    }
    return slot.state;
  }

  /**
   * Whether the client has not yet answered (ACK or NACK) a response of every type it asked for:
   * its work is a newcomer's, queued behind updates to the clients already served ({@link
   * io.xdsproxy.core.WorkLanes}). Until the answer, not only until the response is written: a
   * newcomer's ACK of its first state is read, parsed and compared as its request was (a SotW
   * assignment ACK names every cluster), and a storm's ACKs in the change lane delayed an update to
   * the established clients until the storm had passed.
   */
  boolean awaitsFirstState() {
    return unsettled > 0;
  }

  /** The client ACKed or NACKed a response of {@code type}: it holds a first state of it. */
  void replied(TypeUrl type) {
    Slot<S> slot = types.get(type);
    if (slot != null && !slot.settled) {
      slot.settled = true;
      unsettled--;
    }
  }

  /** Each type's state, in push order. */
  void forEach(BiConsumer<TypeUrl, S> action) {
    types.forEach((type, slot) -> action.accept(type, slot.state));
  }

  /** The nonce of a response about to be sent. */
  private long nextNonce() {
    return ++nonces;
  }

  /** Writes the response owed for {@code type}, if any, now or when the transport is ready. */
  void send(TypeUrl type) {
    send(type, false);
  }

  private void send(TypeUrl type, boolean deferRemovals) {
    Slot<S> slot = types.get(type);
    if (slot == null) {
      return;
    }
    if (!transport.isReady()) {
      slot.blocked = true;
      return;
    }
    if (!assignmentsOwed.isEmpty() && type.equals(TypeUrl.ENDPOINT)) {
      slot.state.owe(assignmentsOwed);
      assignmentsOwed = Set.of();
    }
    Optional<EncodedResponse> response = slot.state.respond(deferRemovals, this::nextNonce);
    if (response.isPresent()) {
      transport.write(type, response.get());
      if (slot.unwritten) {
        transport.fannedOut(type, slot.unwrittenSince);
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
   * ClusterLoadAssignment response is supplied … even if there is no change in endpoints"
   * ("Resource warming"). After a Cluster response that added or changed {@code clusters}, the
   * client gets their assignments at once, changed or not: a Delta Envoy asks for none it already
   * subscribes to ({@code WatchMap::findAdditions}), and a SotW Envoy's request for them looks like
   * an ACK. Control planes send them so (istiod {@code forceEDSPush} and full pushes,
   * go-control-plane's snapshot versions, java-control-plane's {@code hasClusterChanged}). Only on
   * ADS, where the two types share one stream and its order; not waiting for the Cluster ACK, which
   * Envoy withholds while a cluster warms ({@code ClusterManagerImpl::updateClusterCounts}).
   */
  private void sendAssignmentsOfWarming(S clustersSent, boolean deferRemovals) {
    Slot<S> endpoints = types.get(TypeUrl.ENDPOINT);
    // Before the client asks for assignments, only those of clusters it held may be claimed
    // unchanged by its first request for them; any other it is sent in full.
    List<XdsResource> clusters = clustersSent.takeWarming(endpoints == null);
    if (clusters.isEmpty() || !ads) {
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
   * Each type whose snapshot in the group ({@code snapshots} reads the current one of a type) is
   * newer than the one its state took last takes it, and the changes are pushed, in push order.
   * What changed is found by comparing, not kept as announced: so a stream holds nothing per update
   * but its states, and never goes back in time.
   */
  void catchUp(Function<TypeUrl, TypeSnapshot> snapshots) {
    catchUp(snapshots, null);
  }

  /**
   * As {@link #catchUp(Function)}, with {@code type} pushed in the same round whether its state was
   * behind or not: a request for it has just brought its state up to date, and its changes belong
   * to the same make-before-break order as the others'.
   */
  void catchUpWith(TypeUrl type, Function<TypeUrl, TypeSnapshot> snapshots) {
    catchUp(snapshots, type);
  }

  private void catchUp(Function<TypeUrl, TypeSnapshot> snapshots, TypeUrl along) {
    List<TypeUrl> changed = new ArrayList<>(types.size());
    for (Map.Entry<TypeUrl, Slot<S>> entry : types.entrySet()) {
      Slot<S> slot = entry.getValue();
      TypeSnapshot snapshot = snapshots.apply(entry.getKey());
      if (!slot.state.hasTaken(snapshot)) {
        slot.state.update(snapshot);
        if (snapshot.isReceived() && !slot.unwritten) {
          slot.unwritten = true;
          slot.unwrittenSince = snapshot.changedAt();
        }
        changed.add(entry.getKey());
      } else if (entry.getKey().equals(along)) {
        changed.add(along);
      }
    }
    if (!changed.isEmpty()) {
      push(changed);
    }
  }

  /** Whether the group holds a newer snapshot than the stream's state of any type. */
  boolean behind(Function<TypeUrl, TypeSnapshot> snapshots) {
    for (Map.Entry<TypeUrl, Slot<S>> entry : types.entrySet()) {
      if (!entry.getValue().state.hasTaken(snapshots.apply(entry.getKey()))) {
        return true;
      }
    }
    return false;
  }

  /** The transport may be ready again: what it was not ready for is pushed, in push order. */
  void flushBlocked() {
    if (!transport.isReady()) {
      return;
    }
    SortedSet<TypeUrl> blocked = new TreeSet<>();
    types.forEach(
        (type, slot) -> {
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
   * Pushes the changes of {@code types}, given in push order, make-before-break on ADS ("Eventual
   * consistency considerations"): every type's additions and updates first, in push order (CDS,
   * EDS, LDS, RDS, …), and only then what they remove, so that a route never points at a cluster
   * the client has not got, and a cluster is not taken away while a route still points at it.
   */
  private void push(Collection<TypeUrl> types) {
    if (!ads) {
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
}
