package io.xdsproxy.downstream.xds;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeSnapshot.NameState;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.Versions;
import io.xdsproxy.core.XdsResource;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * One type's logical stream within a SotW stream: what the client subscribed to, what was last
 * sent, and what it ACKed or NACKed. Its record of what the client holds is a single pointer, the
 * snapshot the last response was built from; the next response is the difference to it.
 *
 * <p>A client that announces TTL support ("SotW TTL") gets resources that have a TTL or are marked
 * do_not_cache wrapped in a {@link Resource}, and heartbeats; any other client gets bare resources,
 * and never a response for a heartbeat, which changes nothing it can see. The wrapper is how a
 * proxy of a lower tier, which announces TTL support, learns of both.
 */
final class SotwTypeState extends TypeState<SotwOutgoing> {

  /**
   * The resource_names of the last request, as sent; shared with the streams that sent the same.
   */
  private List<String> lastNames;

  /**
   * The list object the last request that held {@link #lastNames} came with, if it held many: the
   * request marshaller gives every request with the same many names one list (shared by the streams
   * of a group, so holding it costs a stream nothing), and an ACK is then found to repeat them by
   * identity rather than name by name.
   */
  private List<String> lastNamesRead;

  /**
   * Names in scope the last response left out as do_not_cache: owed as soon as a fresh copy comes.
   */
  private Set<String> withheld = Set.of();

  /**
   * The last response kept resources that {@link #held} no longer has: the client still holds them.
   */
  private boolean removalsPending;

  /**
   * The client asked again while the store held do_not_cache resources it subscribes to: a whole
   * state waits for the upstream's next copies, since one without them would delete them.
   */
  private boolean awaitsFreshCopies;

  /**
   * For REST-JSON polling, whose requests are not a stream and so are not in client status.
   *
   * @param knowsTtl the client announced TTL and Resource-in-SotW support
   */
  SotwTypeState(TypeUrl type, TypeSnapshot initial, boolean knowsTtl) {
    this(type, initial, knowsTtl, Clock.systemUTC());
  }

  /**
   * @param knowsTtl the client announced TTL and Resource-in-SotW support
   * @param clock stamps responses, ACKs and NACKs for client status
   */
  SotwTypeState(TypeUrl type, TypeSnapshot initial, boolean knowsTtl, Clock clock) {
    super(type, "SotW", initial, knowsTtl, DeliveryStatus.sotw(type, clock));
  }

  /**
   * The resources of {@code outgoing} encoded as a DiscoveryResponse carries them to this client; a
   * whole state is encoded once per snapshot, and a shared response once per position, for every
   * stream that sends it alike.
   */
  @Override
  byte[] encoded(SotwOutgoing outgoing) {
    if (outgoing.whole()) {
      return outgoing.snapshot().memo(knowsTtl ? WHOLE_WRAPPED : WHOLE, () -> body(outgoing));
    }
    return super.encoded(outgoing);
  }

  @Override
  byte[] body(SotwOutgoing outgoing) {
    return SharedEncodings.body(
        knowsTtl ? SOTW_WRAPPED : SOTW,
        outgoing.included(),
        outgoing.heartbeats(),
        List.of(),
        () -> EncodedResponse.sotwBody(encode(outgoing)));
  }

  private static final String SOTW = "SotW";
  private static final String SOTW_WRAPPED = "SotW, wrapped where it says more";

  private static final String WHOLE = "SotW whole state";
  private static final String WHOLE_WRAPPED = "SotW whole state, wrapped where it says more";

  /** The resources of {@code outgoing} as a DiscoveryResponse carries them to this client. */
  List<Any> encode(SotwOutgoing outgoing) {
    List<Any> encoded = new ArrayList<>(outgoing.included().size() + outgoing.heartbeats().size());
    for (XdsResource resource : outgoing.included()) {
      boolean wrapped = knowsTtl && (resource.ttl().isPresent() || resource.doNotCache());
      encoded.add(wrapped ? Any.pack(resource.toResource()) : resource.body());
    }
    for (XdsResource heartbeat : outgoing.heartbeats()) {
      encoded.add(Any.pack(heartbeat.toHeartbeat()));
    }
    return encoded;
  }

  /**
   * Whether a request carrying {@code nonce} answers this stream's latest response. A request with
   * an older nonce is stale and ignored ("Resource updates": stale nonces); before the proxy has
   * sent anything of this type, any nonce is accepted, since it can only come from an earlier
   * stream ("the nonce is valid only in the context of an individual xDS stream").
   */
  boolean isCurrent(String nonce) {
    return nonce.isEmpty() || !answered() || isLatest(nonce);
  }

  /**
   * Whether a request (not a NACK) with {@code resourceNames} and {@code version} asks again for
   * everything already asked for: the names of the last request, and an empty version_info after a
   * response, so the client says it holds no version. A proxy of a lower tier asks so when a client
   * of its own comes for resources it may not serve from its store (do_not_cache), and
   * java-control-plane and go-control-plane answer it with their whole state.
   */
  boolean asksAgain(List<String> resourceNames, String version) {
    return version.isEmpty() && answered() && repeats(resourceNames);
  }

  /**
   * The client {@link #asksAgain asked again}: it is resent everything it subscribes to, but a
   * do_not_cache resource only as the upstream's next copy, not the store's (invariant 3). Returns
   * whether it waits for such a copy, which the group must then ask its upstream for.
   */
  boolean askedAgain() {
    forgetHeld();
    awaitsFreshCopies = joinedNow();
    return awaitsFreshCopies;
  }

  /** Whether {@code resourceNames} are those of the last request, as an ACK's are. */
  boolean repeats(List<String> resourceNames) {
    if (resourceNames == lastNamesRead) {
      return true;
    }
    if (lastNames == null || !resourceNames.equals(lastNames)) {
      return false;
    }
    lastNamesRead = sharedOrNull(resourceNames);
    return true;
  }

  /** {@code names} if the request marshaller shares the list (it holds many), else null. */
  private static List<String> sharedOrNull(List<String> names) {
    return names.size() >= RequestMarshaller.MANY_NAMES ? names : null;
  }

  /** Applies the names of a request; returns whether the subscription changed. */
  boolean subscribe(List<String> resourceNames) {
    // An ACK repeats the names of the request before it: the same list, the same subscription,
    // found without building a set of what can be thousands of names on every ACK.
    if (repeats(resourceNames)) {
      return false;
    }
    lastNames = Subscription.sharedList(resourceNames);
    lastNamesRead = sharedOrNull(resourceNames);
    Subscription next = subscription.sotw(resourceNames);
    if (next.equals(subscription)) {
      return false;
    }
    if (owed.isEmpty() && subscription.names().isEmpty()) {
      // Every name is newly subscribed (a newcomer): owed is the subscription's own set, shared.
      owed = next.names();
    } else {
      for (String name : next.names()) {
        if (!subscription.names().contains(name)) {
          owed = NameSets.with(owed, name); // newly subscribed: sent even if unchanged
        }
      }
      owed = NameSets.retained(owed, next.names()::contains);
    }
    if (!next.interest().beyond(subscription.interest()).isEmpty()) {
      joinedNow();
    }
    if (next.wildcard() && !subscription.wildcard()) {
      // A new wildcard is a request for everything: resend as if nothing had been sent.
      forgetHeld();
    }
    subscription = next;
    return true;
  }

  /**
   * What {@code outgoing} sends that the client did not hold as it is now: all it sends on the
   * stream's first response, since a client that reconnects may hold anything (one whose cluster
   * changed meanwhile warms it, and may have asked for its endpoints on this stream already). Costs
   * what changed since the last response when the store can say what that is, not the whole state.
   */
  @Override
  List<XdsResource> sentAnew(SotwOutgoing outgoing) {
    if (held == null) {
      // A first response: all of it is sent anew, and its own list says so without a copy (which,
      // grown one resource at a time, was most of what a newcomer's stream allocated).
      return outgoing.included();
    }
    Optional<Set<String>> touched = outgoing.snapshot().changedSince(held);
    Iterable<XdsResource> candidates = outgoing.included();
    if (touched.isPresent()) {
      Set<String> names = new HashSet<>(touched.get());
      names.addAll(withheld); // left out last time, so not held, changed since or not
      List<XdsResource> inResponse = new ArrayList<>();
      for (String name : names) {
        XdsResource resource = outgoing.snapshot().get(name);
        if (resource != null && subscription.covers(name) && !outgoing.withheld().contains(name)) {
          inResponse.add(resource);
        }
      }
      candidates = inResponse;
    }
    List<XdsResource> changed = new ArrayList<>();
    for (XdsResource resource : candidates) {
      XdsResource sent = held.get(resource.name());
      if (sent == null || withheld.contains(resource.name()) || differs(sent, resource)) {
        changed.add(resource);
      }
    }
    return changed;
  }

  /**
   * A SotW client claims nothing on connecting: its first request for assignments is answered in
   * full.
   */
  @Override
  boolean claimedOnConnecting(String name) {
    return false;
  }

  /**
   * With {@code deferRemovals}, a full-state response keeps the resources the client holds that are
   * gone upstream, and a response that would only remove is not made at all: the removal is owed to
   * the next call.
   */
  @Override
  Optional<SotwOutgoing> nextResponse(boolean deferRemovals) {
    return subscription.isEmpty() ? Optional.empty() : super.nextResponse(deferRemovals);
  }

  /** Resources the last response withheld are owed to this stream alone. */
  @Override
  boolean ownsResponse() {
    return !withheld.isEmpty();
  }

  /** A response that kept resources gone upstream owes their removal: 2. */
  @Override
  int positionFlags() {
    return removalsPending ? 2 : 0;
  }

  @Override
  Optional<SotwOutgoing> build(boolean deferRemovals) {
    return type().isFullStateInSotw() ? fullState(deferRemovals) : changedOnly();
  }

  @Override
  void afterSent(SotwOutgoing outgoing) {
    removalsPending = outgoing.removalsDeferred();
    withheld = outgoing.withheld();
    owed = Set.of();
    awaitsFreshCopies = false;
  }

  /** The last response's snapshot holds what that response withheld, which the client does not. */
  @Override
  boolean holdsCopyOf(String name) {
    return !withheld.contains(name);
  }

  /** Whether the client would see a difference between what it was sent and {@code current}. */
  private boolean differs(XdsResource sent, XdsResource current) {
    return sent != current && (knowsTtl ? !current.sameAs(sent) : !current.sameBody(sent));
  }

  /**
   * Listener and Cluster: the complete state of what the client subscribed to, sent once every name
   * it asked for is known to exist or not, so that an absent resource means deleted ("Deleting
   * Resources") rather than not yet heard of. A client that knows TTLs gets a response of
   * heartbeats alone when only heartbeats came.
   */
  private Optional<SotwOutgoing> fullState(boolean deferRemovals) {
    if (subscription.wildcard() && !latest.isComplete()) {
      return Optional.empty();
    }
    for (String name : subscription.names()) {
      if (latest.state(name) == NameState.UNKNOWN) {
        return Optional.empty();
      }
    }
    List<XdsResource> resources = new ArrayList<>();
    Set<String> withheldNow = new HashSet<>();
    Iterable<XdsResource> inScope =
        subscription.wildcard()
            ? latest.resources().values()
            : subscription.names().stream()
                .map(latest::get)
                .filter(java.util.Objects::nonNull)
                .toList();
    for (XdsResource resource : inScope) {
      if (servable(resource)) {
        resources.add(resource);
      } else {
        withheldNow.add(resource.name());
      }
    }
    if (awaitsFreshCopies && !withheldNow.isEmpty()) {
      return Optional.empty();
    }
    boolean resend = held == null || !owed.isEmpty() || removalsPending;
    if (!resend
        && (held == latest
            || !knowsTtl
                && withheld.isEmpty()
                && subscription.wildcard()
                && held.version().equals(latest.version()))) {
      // Nothing at all, or nothing such a client can see: the type version covers every resource's.
      return Optional.empty();
    }
    List<XdsResource> heartbeats = new ArrayList<>();
    boolean changed = resend;
    if (!resend) {
      for (XdsResource resource : resources) {
        XdsResource sent = held.get(resource.name());
        if (sent == null || differs(sent, resource) || withheld.contains(resource.name())) {
          changed = true;
        } else if (knowsTtl && sent != resource) {
          heartbeats.add(resource);
        }
      }
    }
    List<XdsResource> removed = held == null ? List.of() : removedSinceLastSent();
    if (!changed && removed.isEmpty()) {
      return heartbeats.isEmpty()
          ? Optional.empty()
          : Optional.of(SotwOutgoing.named(List.of(), heartbeats, latest, withheldNow));
    }
    if (deferRemovals && !removed.isEmpty()) {
      if (!changed) {
        return Optional.empty();
      }
      resources.addAll(removed);
      return Optional.of(
          new SotwOutgoing(
              resources,
              List.of(),
              Versions.ofResources(resources),
              latest,
              true,
              withheldNow,
              false,
              Optional.empty()));
    }
    // The whole state of the type, the same for every wildcard subscriber of the group: its version
    // is the type's, and its encoding is made once for all of them.
    boolean whole = subscription.wildcard() && withheldNow.isEmpty();
    return Optional.of(
        new SotwOutgoing(
            resources,
            List.of(),
            whole ? latest.version() : Versions.ofResources(resources),
            latest,
            false,
            withheldNow,
            whole,
            Optional.empty()));
  }

  /** Resources of the last response that the client subscribes to and that are gone now. */
  private List<XdsResource> removedSinceLastSent() {
    Iterable<String> names =
        subscription.wildcard() ? held.resources().keySet() : subscription.names();
    List<XdsResource> removed = new ArrayList<>();
    for (String name : names) {
      XdsResource had = held.get(name);
      if (had != null && latest.get(name) == null) {
        removed.add(had);
      }
    }
    return removed;
  }

  /**
   * Every other type: only resources that changed since the last response or were newly asked for
   * ("Grouping Resources into Responses"); SotW has no way to say a resource of these types is
   * gone.
   */
  private Optional<SotwOutgoing> changedOnly() {
    List<XdsResource> resources = new ArrayList<>();
    List<XdsResource> heartbeats = new ArrayList<>();
    Set<String> withheldNow = new HashSet<>();
    for (String name : candidates()) {
      XdsResource resource = latest.get(name);
      XdsResource sent = held == null ? null : held.get(name);
      if (resource == null && sent == null && awaitsAssignment(name)) {
        resources.add(emptyAssignment(name));
        continue;
      }
      if (resource == null) {
        continue;
      }
      if (!servable(resource)) {
        withheldNow.add(name);
      } else if (sent == null
          || owed.contains(name)
          || withheld.contains(name)
          || differs(sent, resource)) {
        resources.add(resource);
      } else if (knowsTtl && sent != resource) {
        heartbeats.add(resource);
      }
    }
    if (resources.isEmpty() && heartbeats.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(SotwOutgoing.named(resources, heartbeats, latest, withheldNow));
  }

  /**
   * Rule 21 of interop.md: an assignment the client waits for and the upstream does not have (its
   * not-found timer said so) is answered with an empty one, as istiod answers it at once ({@code
   * buildEmptyClusterLoadAssignment}): an Envoy warming that cluster would otherwise wait for its
   * initial_fetch_timeout, forever under istiod's config (0 s), and never start its listeners. Sent
   * once: when the name is asked for anew, on the stream's first response, or once it became
   * absent.
   */
  private boolean awaitsAssignment(String name) {
    return type().equals(TypeUrl.ENDPOINT)
        && latest.state(name) == NameState.ABSENT
        && subscription.names().contains(name)
        && (held == null || owed.contains(name) || held.state(name) != NameState.ABSENT);
  }

  private static XdsResource emptyAssignment(String name) {
    return XdsResource.of(
        name, Any.pack(ClusterLoadAssignment.newBuilder().setClusterName(name).build()));
  }

  /**
   * The names {@link #changedOnly} must look at: when the store can say what changed since the last
   * response, those and the names owed for other reasons (newly subscribed, withheld), so that a
   * change of one resource costs a stream what changed, not everything it subscribed to; else every
   * name in scope.
   */
  private Iterable<String> candidates() {
    Optional<Set<String>> changed = held == null ? Optional.empty() : latest.changedSince(held);
    if (changed.isEmpty()) {
      return subscription.wildcard() ? latest.resources().keySet() : subscription.names();
    }
    Set<String> names = new HashSet<>();
    for (String name : changed.get()) {
      if (subscription.covers(name)) {
        names.add(name);
      }
    }
    names.addAll(owed);
    for (String name : withheld) {
      if (subscription.covers(name)) {
        names.add(name);
      }
    }
    return names;
  }
}
