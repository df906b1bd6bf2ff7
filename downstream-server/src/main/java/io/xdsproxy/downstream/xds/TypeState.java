package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * One type's logical stream within a downstream stream, as far as both variants of the protocol
 * agree: the nonce of the latest response and what the client said of it ("ACK and NACK
 * semantics"), the snapshot the client holds, the names it is owed whatever it holds, the
 * do_not_cache gate of DESIGN invariant 3, one response and one encoding for every stream in the
 * same {@link ResponsePosition}, and the clusters a Cluster response leaves warming (rule 18 of
 * interop.md). {@link SotwTypeState} adds whole-type responses and the legacy wildcard ("Grouping
 * Resources into Responses"); {@link DeltaTypeState} per-resource versions, removals, subscribe and
 * unsubscribe, and {@code initial_resource_versions} ("Incremental xDS"). As Envoy's {@code
 * BaseSubscriptionState} under its SotW and Delta subscription states.
 *
 * <p>Confined to its stream's executor (a REST poll's, for {@link RestDiscovery}): it follows the
 * group's snapshots of its type ({@link #update}) and never reads the store itself.
 *
 * @param <O> a response ready to send, in the variant
 */
abstract class TypeState<O extends TypeState.Outgoing<O>> {

  /** A response ready to send, in either variant. */
  interface Outgoing<O> {
    /** Its {@code version_info} (SotW) or {@code system_version_info} (Delta). */
    String version();

    /** The snapshot it brings the client to. */
    TypeSnapshot snapshot();

    /**
     * The names in scope it leaves out as do_not_cache: owed once the upstream's next copy comes.
     */
    Set<String> withheld();

    /** The position of the streams that owe it alike, if it is shared. */
    Optional<ResponsePosition> sharedAt();

    /** The same response, owed alike by every stream at {@code position}. */
    O sharedAt(ResponsePosition position);

    /**
     * How many resources, heartbeats and removals it carries: what a shared one weighs in the memo.
     */
    int entries();
  }

  private final TypeUrl type;

  /** "SotW" or "Delta": streams of either owe other responses in the same position. */
  private final String variant;

  /** The client announced TTL support: it gets TTLs and heartbeats ("TTL"). */
  protected final boolean knowsTtl;

  private final DeliveryStatus deliveries;
  protected Subscription subscription = Subscription.NONE;

  /** The group's latest snapshot of the type, as the stream last heard of it. */
  protected TypeSnapshot latest;

  /**
   * The snapshot the last response brought the client to: the next response is the difference to
   * it. Null before the first response, and for SotW when the client is to be sent everything
   * again.
   */
  protected TypeSnapshot held;

  /**
   * Names (Delta: or aliases) the next response owes the client whatever it holds of them, a
   * resource or (Delta) its removal: newly subscribed, withheld as do_not_cache (Delta), the
   * assignments of clusters a Cluster response changed ({@link #owe}). Nearly always none.
   */
  protected Set<String> owed = Set.of();

  /**
   * The snapshot when the client last asked for more, whose do_not_cache resources predate the ask;
   * null when it held none, as nearly always ({@link TypeSnapshot#ifUncacheable}).
   */
  private TypeSnapshot joined;

  /**
   * Of a Cluster stream: what the last response sent anew or changed, until {@link #takeWarming}.
   */
  private List<XdsResource> warming = List.of();

  /** Of those, the ones the client claimed an older version of when it connected (Delta). */
  private List<XdsResource> warmingHeld = List.of();

  /**
   * The nonce of the latest response, 0 before the first: a number, written as its decimal digits
   * ({@link #isLatest}), so that a response stores no string of its own in the stream.
   */
  private long lastNonce;

  /**
   * The version the client last ACKed, unless {@link #ackedHeld}: then it is {@link #held}'s, and
   * is copied here only when the next response is sent, so that an ACK, which every client sends
   * for every response, stores no reference into this long-lived object (issue 18, round five).
   */
  private String ackedVersion = "";

  private boolean ackedHeld;
  private String lastNackMessage;

  /**
   * @param variant "SotW" or "Delta"
   * @param initial the group's snapshot of {@code type} when the client first asked for it
   * @param deliveries where client status records what was sent and answered
   */
  TypeState(
      TypeUrl type,
      String variant,
      TypeSnapshot initial,
      boolean knowsTtl,
      DeliveryStatus deliveries) {
    this.type = type;
    this.variant = variant;
    this.latest = initial;
    this.joined = initial.ifUncacheable();
    this.knowsTtl = knowsTtl;
    this.deliveries = deliveries;
  }

  final TypeUrl type() {
    return type;
  }

  final Subscription subscription() {
    return subscription;
  }

  /** The group published {@code snapshot} of the type. */
  final void update(TypeSnapshot snapshot) {
    latest = snapshot;
  }

  /**
   * Whether {@code snapshot}, the group's current one of the type, is the one the stream last took:
   * the group's snapshots of a type are numbered in order ({@link TypeSnapshot#sequence}).
   */
  final boolean hasTaken(TypeSnapshot snapshot) {
    return snapshot.sequence() == latest.sequence();
  }

  /** The version the client last ACKed, empty if none. */
  final String ackedVersion() {
    return ackedHeld ? held.version() : ackedVersion;
  }

  final Optional<String> lastNackMessage() {
    return Optional.ofNullable(lastNackMessage);
  }

  /** Each resource subscribed to, with what the client was sent of it and said of it: for CSDS. */
  final List<ResourceStatus> resourceStatuses() {
    return deliveries.statuses(type, subscription, latest);
  }

  /** Whether {@code nonce} names the latest response of this type. */
  final boolean isLatest(String nonce) {
    return lastNonce != 0 && spells(nonce, lastNonce);
  }

  /** Whether {@code text} is the decimal digits of {@code number} (positive), with no leading 0. */
  static boolean spells(String text, long number) {
    long rest = number;
    for (int i = text.length() - 1; i >= 0; i--) {
      if (rest == 0 || text.charAt(i) != (char) ('0' + rest % 10)) {
        return false;
      }
      rest /= 10;
    }
    return rest == 0 && !text.isEmpty();
  }

  /** Whether a response of this type was sent on this stream. */
  final boolean answered() {
    return lastNonce != 0;
  }

  /** The client ACKed the latest response, saying it holds {@code version} of the type. */
  final void ack(String version) {
    // The snapshot's own string where it is the same (nearly always): every stream then holds one
    // string, not its own copy, and the ACK stores nothing but a flag.
    ackedHeld = held != null && version.equals(held.version());
    if (!ackedHeld) {
      ackedVersion = version;
    }
    deliveries.acked();
  }

  /** The client is to be sent everything again, as if nothing had been sent ({@link #held}). */
  final void forgetHeld() {
    settleAck();
    held = null;
  }

  /** {@link #held} is about to change: the version the client ACKed no longer refers to it. */
  private void settleAck() {
    if (ackedHeld) {
      ackedVersion = held.version();
      ackedHeld = false;
    }
  }

  /** The client NACKed the latest response with {@code message}. */
  final void nack(String message) {
    lastNackMessage = message;
    deliveries.nacked(message);
  }

  /**
   * The client asked for more than it had: the do_not_cache resources the store holds now predate
   * its ask, and are not served to it ({@link #servable}). Returns whether it subscribes to any of
   * them.
   */
  final boolean joinedNow() {
    joined = latest.ifUncacheable();
    return joined != null && joined.holdsUncacheable(subscription.interest());
  }

  /**
   * Whether {@code resource} may be sent to this client. One the upstream marked do_not_cache is
   * not served from the store to a client that asked for it after it came (invariant 3): that
   * client waits for the upstream's next copy, which the proxy asks for. Only a client that holds
   * this very copy keeps it.
   */
  final boolean servable(XdsResource resource) {
    return !resource.doNotCache()
        || joined == null
        || joined.get(resource.name()) != resource
        || held != null && held.get(resource.name()) == resource && holdsCopyOf(resource.name());
  }

  /**
   * Whether the client holds the copy of {@code name} in {@link #held}: the snapshot a response
   * brought it to holds what that response withheld too, and what the client asked for again.
   */
  abstract boolean holdsCopyOf(String name);

  /**
   * The next response owes the client {@code names}, those of them it subscribes to, whether they
   * changed or not; returns whether any is owed.
   */
  final boolean owe(Set<String> names) {
    boolean any = false;
    for (String name : names) {
      if (subscription.covers(name)) {
        owed = NameSets.with(owed, name);
        any = true;
      }
    }
    return any;
  }

  /**
   * Of a Cluster stream: the clusters the last response sent anew or changed, which a client warms
   * until their assignments come ("Resource warming"); each given once. With {@code heldOnly}, only
   * those the client held an older version of when it connected, for which its first request for
   * assignments may claim one it holds (Delta's {@code initial_resource_versions}). Empty of other
   * types.
   */
  final List<XdsResource> takeWarming(boolean heldOnly) {
    List<XdsResource> taken = heldOnly ? warmingHeld : warming;
    warming = List.of();
    warmingHeld = List.of();
    return taken;
  }

  /**
   * The response owed now, if any, encoded and recorded as sent with a nonce from {@code nonces}:
   * one is made only for a response that is sent, as most calls find none owed. With {@code
   * deferRemovals}, nothing the client holds is taken away yet (make-before-break).
   */
  final Optional<EncodedResponse> respond(boolean deferRemovals, LongSupplier nonces) {
    Optional<O> outgoing = nextResponse(deferRemovals);
    if (outgoing.isEmpty()) {
      return Optional.empty();
    }
    long nonce = nonces.getAsLong();
    sent(outgoing.get(), nonce);
    return Optional.of(
        new EncodedResponse(
            outgoing.get().version(), type.url(), Long.toString(nonce), encoded(outgoing.get())));
  }

  /**
   * The response owed to the client now, if any ("When to send an update": only when something it
   * subscribed to changed or was newly asked for). With {@code deferRemovals}, removals are owed to
   * a later call, and a response that would only remove is not made. Streams in the same {@link
   * ResponsePosition} share one, built once.
   */
  Optional<O> nextResponse(boolean deferRemovals) {
    if (latest.holdsUncacheable() || ownsResponse()) {
      return build(deferRemovals); // owed for reasons of this stream's own
    }
    // A newcomer holds nothing: its first state is the same as every other newcomer's that
    // subscribed alike, a reconnect storm's thousands of them built and encoded once.
    ResponsePosition position =
        new ResponsePosition(
            variant,
            held == null ? ResponsePosition.HOLDS_NOTHING : held.sequence(),
            subscription,
            knowsTtl,
            (deferRemovals ? 1 : 0) | positionFlags(),
            Set.copyOf(owed));
    return latest.share(
        position,
        () -> build(deferRemovals).map(outgoing -> outgoing.sharedAt(position)),
        outgoing -> 64 + 8L * outgoing.map(Outgoing::entries).orElse(0));
  }

  /** Whether the response owed depends on state of this stream's own, which no position says. */
  abstract boolean ownsResponse();

  /** Flags of the position beyond deferring removals (1). */
  int positionFlags() {
    return 0;
  }

  /**
   * The response owed now, built for this stream. Every stream in the same {@link ResponsePosition}
   * owes the same: what it reads of this stream is in the position, or is empty or unused whenever
   * {@link #nextResponse} shares it ({@link #ownsResponse}; when the client joined matters only for
   * do_not_cache resources, whose presence makes every stream build its own).
   */
  abstract Optional<O> build(boolean deferRemovals);

  /**
   * The body of {@code outgoing} (its resources, and a Delta response's removals) as its message
   * carries it; a shared response is encoded once, for every stream that sends it.
   */
  byte[] encoded(O outgoing) {
    if (outgoing.sharedAt().isPresent()) {
      return outgoing
          .snapshot()
          .share(outgoing.sharedAt().get().encoding(), () -> body(outgoing), bytes -> bytes.length);
    }
    return body(outgoing);
  }

  /**
   * The body of {@code outgoing}: encoded anew, or the one another group made of the same resources
   * ({@link SharedEncodings}).
   */
  abstract byte[] body(O outgoing);

  /**
   * Marks {@code outgoing} as sent with {@code nonce} (positive): the client now holds its
   * snapshot.
   */
  final void sent(O outgoing, long nonce) {
    if (type.equals(TypeUrl.CLUSTER)) {
      warming = sentAnew(outgoing);
      List<XdsResource> claimed = new ArrayList<>();
      for (XdsResource cluster : warming) {
        if (claimedOnConnecting(cluster.name())) {
          claimed.add(cluster);
        }
      }
      warmingHeld = claimed.isEmpty() ? List.of() : claimed;
    }
    settleAck();
    held = outgoing.snapshot();
    lastNonce = nonce;
    afterSent(outgoing);
    deliveries.sent(outgoing.version(), outgoing.snapshot(), subscription, outgoing.withheld());
  }

  /** Of a Cluster response about to be recorded as sent: the clusters it sends anew or changed. */
  abstract List<XdsResource> sentAnew(O outgoing);

  /**
   * Whether the client claimed a version of {@code name} when it connected ("Incremental
   * reconnect").
   */
  abstract boolean claimedOnConnecting(String name);

  /**
   * What else sending {@code outgoing} settles of the variant's own state; {@link #held} is its
   * snapshot now.
   */
  abstract void afterSent(O outgoing);
}
