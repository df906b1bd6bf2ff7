package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeSnapshot.NameState;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * One type's logical stream within an incremental (Delta) stream ("Incremental xDS"). What the
 * client holds is recorded as the snapshot the last response was built from, plus what it claimed
 * on connecting ({@code initial_resource_versions}) until the proxy has answered for those names;
 * the next response is the per-resource difference to it, restricted to what the client subscribed
 * to. A stream therefore costs a pointer per type, not a map of names and versions.
 */
final class DeltaTypeState extends TypeState<DeltaTypeState.Outgoing> {

  /**
   * A response ready to send: the resources it carries and those it refreshes (heartbeats), the
   * snapshot it brings the client to, the removals it leaves for a later response
   * (make-before-break), what it left out as do_not_cache, and the position of the streams that owe
   * it alike, if it is shared. It holds the store's resources, not their wrappers: a shared
   * response lives as long as its snapshot, and wrappers made for it would be a copy of the state
   * per snapshot (the wrappers are made when it is encoded, once).
   */
  record Outgoing(
      List<XdsResource> included,
      List<XdsResource> heartbeats,
      List<String> removed,
      TypeSnapshot snapshot,
      List<String> deferred,
      Set<String> withheld,
      Optional<ResponsePosition> sharedAt)
      implements TypeState.Outgoing<Outgoing> {

    Outgoing {
      withheld =
          withheld.isEmpty() ? Set.of() : withheld; // streams keep it: an empty one costs nothing
    }

    Outgoing(
        List<XdsResource> included,
        List<XdsResource> heartbeats,
        List<String> removed,
        TypeSnapshot snapshot,
        List<String> deferred,
        Set<String> withheld) {
      this(included, heartbeats, removed, snapshot, deferred, withheld, Optional.empty());
    }

    @Override
    public Outgoing sharedAt(ResponsePosition position) {
      return new Outgoing(
          included, heartbeats, removed, snapshot, deferred, withheld, Optional.of(position));
    }

    /** Its system_version_info: the version of the snapshot it brings the client to. */
    @Override
    public String version() {
      return snapshot.version();
    }

    @Override
    public int entries() {
      return included.size() + heartbeats.size() + removed.size();
    }
  }

  private boolean requested;

  /** Versions the client said it has from an earlier stream, for names not answered for yet. */
  private Map<String, String> claimed = Map.of();

  /** Names the client holds that are gone, whose removal a response left for the next one. */
  private Set<String> pendingRemovals = Set.of();

  /** Everything in the wildcard is to be sent: the wildcard was just subscribed to. */
  private boolean forceAll;

  /**
   * @param knowsTtl the client announced TTL support: it gets TTLs and heartbeats ("TTL")
   * @param clock stamps responses, ACKs and NACKs for client status
   */
  DeltaTypeState(TypeUrl type, TypeSnapshot initial, boolean knowsTtl, Clock clock) {
    super(type, "Delta", initial, knowsTtl, DeliveryStatus.delta(clock));
  }

  /**
   * The client ACKed the latest response ({@link #isLatest}; ACKs and NACKs of older ones are
   * stale): it holds the state that response brought it to.
   */
  void ack() {
    ack(held.version());
  }

  /**
   * What a request did: whether it changed the subscription, and whether it asked again for
   * do_not_cache resources the store holds, which the group must then ask its upstream for.
   */
  record Subscribed(boolean changed, boolean refetch) {}

  /**
   * Applies a request's subscription changes. The request's {@code initial_resource_versions} count
   * only on the first request of the type ("Incremental reconnect").
   */
  Subscribed subscribe(
      List<String> subscribe, List<String> unsubscribe, Map<String, String> initialVersions) {
    boolean first = !requested;
    requested = true;
    boolean refetch = !first && applyAskingAgain(subscribe);
    if (first && !initialVersions.isEmpty()) {
      claimed = new HashMap<>(initialVersions);
    }
    Subscription next = subscription.delta(subscribe, unsubscribe, first);
    // A stream that holds and claims nothing is sent everything anyway: marked, its first state
    // would be its own rather than the one every newcomer shares.
    boolean holdsNothing = held == null && claimed.isEmpty();
    if (next.wildcard()
        && !subscription.wildcard()
        && !(first && !initialVersions.isEmpty())
        && !holdsNothing) {
      forceAll = true;
    }
    if (owed.isEmpty()
        && subscription.names().isEmpty()
        && unsubscribe.isEmpty()
        && claimed.isEmpty()) {
      // Every name subscribed is owed, and only those (a newcomer that claims nothing): the
      // subscription's own set, shared, rather than a copy.
      if (owed != next.names()) { // an ACK stores nothing
        owed = next.names();
      }
    } else {
      owe(subscribe, unsubscribe, first, next);
    }
    boolean changed = next != subscription && !next.equals(subscription);
    if (!subscribe.isEmpty()
        || changed && !next.interest().beyond(subscription.interest()).isEmpty()) {
      joinedNow();
    }
    if (next != subscription) {
      subscription = next;
    }
    return new Subscribed(changed, refetch);
  }

  /**
   * What a request that subscribes and unsubscribes these names adds to or takes from what is owed.
   */
  private void owe(
      List<String> subscribe, List<String> unsubscribe, boolean first, Subscription next) {
    for (String name : unsubscribe) {
      if (!next.covers(name)) {
        owed = NameSets.without(owed, name); // no longer wanted: nothing is owed of it
      } else if (!Subscription.WILDCARD.equals(name) && subscription.names().contains(name)) {
        // "Unsubscribing from Resources": a client with a wildcard that drops a name it also named
        // cannot tell whether the wildcard still covers it, so it is told either way.
        owed = NameSets.with(owed, name);
      }
      // Else a phantom unsubscription, ignored: what is owed of a name the wildcard covers stays
      // owed.
    }
    for (String name : subscribe) {
      // "Subscribing to Resources": sent even if the client seems to have it; it may have
      // forgotten. Only what the same first request claims it has is taken at its word: a claim not
      // yet answered may be of a resource the client has dropped since, unsubscribing.
      if (!Subscription.WILDCARD.equals(name) && !(first && claimed.containsKey(name))) {
        owed = NameSets.with(owed, name);
      }
    }
  }

  /**
   * "Subscribing to Resources": names subscribed again are sent again (owed, below), and everything
   * under the wildcard when it is subscribed again (here); not from the store's copy where it is
   * do_not_cache ({@link #servable}): a proxy of a lower tier asks again so when a client of its
   * own comes for such a resource, and must get the upstream's next copy. Returns whether the
   * request asks again for such a resource, which the group must then ask its upstream for.
   */
  private boolean applyAskingAgain(List<String> subscribe) {
    boolean all = subscription.wildcard() && subscribe.contains(Subscription.WILDCARD);
    if (all) {
      forceAll = true;
    }
    if (!latest.holdsUncacheable()) {
      return false;
    }
    for (XdsResource resource : latest.resources().values()) {
      if (resource.doNotCache()
          && (all
              || subscription.names().contains(resource.name())
                  && subscribe.contains(resource.name()))) {
        return true;
      }
    }
    return false;
  }

  /**
   * Claims from a reconnect, removals owed and a wildcard subscribed again are this stream's alone.
   */
  @Override
  boolean ownsResponse() {
    return forceAll || !claimed.isEmpty() || !pendingRemovals.isEmpty();
  }

  /**
   * The resources and removals of {@code outgoing}, encoded as a DeltaDiscoveryResponse carries
   * them; the same body another group holds for the same resources is that one ({@link
   * SharedEncodings}).
   */
  @Override
  byte[] body(Outgoing outgoing) {
    return SharedEncodings.body(
        knowsTtl ? DELTA_WITH_TTLS : DELTA,
        outgoing.included(),
        outgoing.heartbeats(),
        outgoing.removed(),
        () -> encode(outgoing));
  }

  private static final String DELTA = "Delta";
  private static final String DELTA_WITH_TTLS = "Delta, with TTLs";

  private byte[] encode(Outgoing outgoing) {
    List<Resource> wrapped =
        new ArrayList<>(outgoing.included().size() + outgoing.heartbeats().size());
    for (XdsResource resource : outgoing.included()) {
      wrapped.add(resource.toResource(knowsTtl));
    }
    for (XdsResource resource : outgoing.heartbeats()) {
      wrapped.add(resource.toHeartbeat());
    }
    return EncodedResponse.deltaBody(wrapped, outgoing.removed());
  }

  /**
   * Resources the client lacks or holds at another version, and removals; with {@code
   * deferRemovals}, removals are left for the next call, and a response that would only remove is
   * not made.
   */
  @Override
  Optional<Outgoing> build(boolean deferRemovals) {
    List<XdsResource> resources = new ArrayList<>();
    List<XdsResource> heartbeats = new ArrayList<>();
    List<String> removed = new ArrayList<>();
    Set<String> sent = new HashSet<>();
    Set<String> withheld = new HashSet<>();
    for (String name : candidates()) {
      XdsResource current = latest.resolve(name);
      if (current != null && covers(current) && !servable(current)) {
        withheld.add(name);
      } else if (current != null) {
        if (covers(current) && sent.add(current.name())) {
          if (mustSend(name, current)) {
            resources.add(current);
          } else if (knowsTtl && isHeartbeat(current)) {
            heartbeats.add(current);
          }
        }
      } else if (latest.state(name) == NameState.ABSENT && mustReportRemoved(name)) {
        removed.add(name);
      }
    }
    if (deferRemovals && !removed.isEmpty()) {
      return resources.isEmpty() && heartbeats.isEmpty()
          ? Optional.empty()
          : Optional.of(new Outgoing(resources, heartbeats, List.of(), latest, removed, withheld));
    }
    for (String name : pendingRemovals) {
      if (latest.resolve(name) == null && !removed.contains(name)) {
        removed.add(name);
      }
    }
    if (resources.isEmpty()
        && heartbeats.isEmpty()
        && removed.isEmpty()
        && (held != null || !readyToAnswer())) {
      return Optional.empty();
    }
    // Rule 17 of interop.md: the first request of a type is answered, even with nothing, once the
    // proxy knows what there is: an Envoy starting against an empty Cluster set waits for the
    // answer.
    return Optional.of(new Outgoing(resources, heartbeats, removed, latest, List.of(), withheld));
  }

  /**
   * Whether the state of everything subscribed to is known: a wildcard was answered, and every
   * name.
   */
  private boolean readyToAnswer() {
    if (subscription.isEmpty() || subscription.wildcard() && !latest.isComplete()) {
      return false;
    }
    for (String name : subscription.names()) {
      if (latest.state(name) == NameState.UNKNOWN) {
        return false;
      }
    }
    return true;
  }

  @Override
  List<XdsResource> sentAnew(Outgoing outgoing) {
    return outgoing.included(); // a heartbeat changes nothing
  }

  @Override
  boolean claimedOnConnecting(String name) {
    return claimed.containsKey(name);
  }

  @Override
  void afterSent(Outgoing outgoing) {
    pendingRemovals =
        outgoing.deferred().isEmpty()
            ? Set.of()
            : NameSets.withAll(pendingRemovals, outgoing.deferred());
    forceAll = false;
    // A name not heard of yet stays owed, with what the client claimed of it. A complete state
    // (a wildcard's answer) has heard of every name; else a name present is found by one lookup
    // before its aliases are searched (a Delta newcomer's first response owed a thousand).
    owed =
        held.isComplete()
            ? Set.of()
            : NameSets.retained(
                owed, name -> held.state(name) == NameState.UNKNOWN && held.resolve(name) == null);
    // Left out as do_not_cache: owed, whatever its version, once the upstream's fresh copy comes.
    owed = NameSets.withAll(owed, outgoing.withheld());
    if (!claimed.isEmpty()) {
      claimed.keySet().removeIf(name -> held.state(name) != NameState.UNKNOWN);
      if (claimed.isEmpty()) {
        claimed = Map.of(); // a hash table never shrinks: the emptied one is dropped
      }
    }
  }

  /**
   * Every name that could need a resource or a removal: in scope now, or held by the client. When
   * the store can say what changed since the client's {@link #held}, only those and the names owed
   * or claimed whatever changed: a change of one resource then costs a stream what changed, not
   * everything it subscribed to.
   */
  private Set<String> candidates() {
    Set<String> names = new LinkedHashSet<>(owed);
    names.addAll(claimed.keySet());
    Optional<Set<String>> changed =
        held == null || forceAll ? Optional.empty() : latest.changedSince(held);
    if (changed.isPresent()) {
      for (String name : changed.get()) {
        if (subscription.covers(name)) {
          names.add(name);
        }
      }
      return names;
    }
    names.addAll(subscription.names());
    if (subscription.wildcard()) {
      names.addAll(latest.resources().keySet());
      if (held != null) {
        names.addAll(held.resources().keySet());
      }
    }
    return names;
  }

  /**
   * Not if the client asked for it again, nor if the last response withheld it: those names are
   * owed ({@link #owed}).
   */
  @Override
  boolean holdsCopyOf(String name) {
    return !forceAll && !owed.contains(name);
  }

  private boolean covers(XdsResource resource) {
    if (subscription.covers(resource.name())) {
      return true;
    }
    for (String alias : resource.aliases()) {
      if (subscription.covers(alias)) {
        return true;
      }
    }
    return false;
  }

  private boolean mustSend(String name, XdsResource current) {
    if (owed.contains(name) || forceAll) {
      return true;
    }
    String version = heldVersion(current.name());
    if (version == null || !version.equals(current.version())) {
      return true;
    }
    // Same version, other TTL: "the management server resends the resource with a new TTL".
    XdsResource sent = held == null ? null : held.get(current.name());
    return knowsTtl && sent != null && sent != current && !sent.sameAs(current);
  }

  /** The resource was refreshed by a heartbeat since the client got it. */
  private boolean isHeartbeat(XdsResource current) {
    XdsResource sent = held == null ? null : held.get(current.name());
    return sent != null && sent != current && sent.sameAs(current);
  }

  /**
   * A name is reported removed when the client holds it, when it asked for it anew, or, the first
   * time the proxy learns it does not exist, when the client subscribed to it ("Knowing When a
   * Requested Resource Does Not Exist").
   */
  private boolean mustReportRemoved(String name) {
    if (owed.contains(name) || heldVersion(name) != null) {
      return true;
    }
    return subscription.names().contains(name)
        && (held == null || held.state(name) != NameState.ABSENT);
  }

  /** The version of {@code name} the client holds, or null. */
  private String heldVersion(String name) {
    String claim = claimed.get(name);
    if (claim != null) {
      return claim;
    }
    XdsResource had = held == null ? null : held.get(name);
    return had == null ? null : had.version();
  }
}
