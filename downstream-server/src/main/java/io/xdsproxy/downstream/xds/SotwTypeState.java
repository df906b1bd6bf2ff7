package io.xdsproxy.downstream.xds;

import com.google.protobuf.Any;
import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeSnapshot.NameState;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.Versions;
import io.xdsproxy.core.XdsResource;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * One type's logical stream within a SotW stream: what the client subscribed to, what was last
 * sent, and what it ACKed or NACKed. Its record of what the client holds is a single pointer, the
 * snapshot the last response was built from; the next response is the difference to it.
 */
final class SotwTypeState {

  /**
   * A response ready to send: its resources, its version_info, the snapshot it was built from, and
   * whether it still holds resources that snapshot has removed (make-before-break).
   */
  record Outgoing(List<XdsResource> included, String version, TypeSnapshot snapshot, boolean removalsDeferred) {
    /** The resources as a DiscoveryResponse carries them. */
    List<Any> resources() {
      return included.stream().map(XdsResource::body).toList();
    }
  }

  private final TypeUrl type;
  private Subscription subscription = Subscription.NONE;
  /** Names added to the subscription since the last response: sent even if unchanged. */
  private final Set<String> newlySubscribed = new HashSet<>();
  private TypeSnapshot latest;
  private TypeSnapshot lastSent;
  /** The last response kept resources that {@link #lastSent} no longer has: the client still holds them. */
  private boolean removalsPending;
  private String lastNonce = "";
  private String ackedVersion = "";
  private String lastNackMessage;

  SotwTypeState(TypeUrl type, TypeSnapshot initial) {
    this.type = type;
    this.latest = initial;
  }

  TypeUrl type() {
    return type;
  }

  Subscription subscription() {
    return subscription;
  }

  String lastNonce() {
    return lastNonce;
  }

  String ackedVersion() {
    return ackedVersion;
  }

  Optional<String> lastNackMessage() {
    return Optional.ofNullable(lastNackMessage);
  }

  /**
   * Whether a request carrying {@code nonce} answers this stream's latest response. A request with
   * an older nonce is stale and ignored ("Resource updates": stale nonces); before the proxy has
   * sent anything of this type, any nonce is accepted, since it can only come from an earlier
   * stream ("the nonce is valid only in the context of an individual xDS stream").
   */
  boolean isCurrent(String nonce) {
    return nonce.isEmpty() || lastNonce.isEmpty() || nonce.equals(lastNonce);
  }

  void ack(String version) {
    ackedVersion = version;
  }

  void nack(String message) {
    lastNackMessage = message;
  }

  /** Applies the names of a request; returns whether the subscription changed. */
  boolean subscribe(List<String> resourceNames) {
    Subscription next = subscription.sotw(resourceNames);
    if (next.equals(subscription)) {
      return false;
    }
    for (String name : next.names()) {
      if (!subscription.names().contains(name)) {
        newlySubscribed.add(name);
      }
    }
    newlySubscribed.retainAll(next.names());
    if (next.wildcard() && !subscription.wildcard()) {
      // A new wildcard is a request for everything: resend as if nothing had been sent.
      lastSent = null;
    }
    subscription = next;
    return true;
  }

  void update(TypeSnapshot snapshot) {
    latest = snapshot;
  }

  /**
   * The response owed to the client now, if any ("When to send an update": only when something it
   * subscribed to changed or was newly asked for). With {@code deferRemovals}, a full-state response
   * keeps the resources the client holds that are gone upstream, and a response that would only
   * remove is not made at all: the removal is owed to the next call.
   */
  Optional<Outgoing> nextResponse(boolean deferRemovals) {
    if (subscription.isEmpty()) {
      return Optional.empty();
    }
    if (!type.isFullStateInSotw()) {
      List<XdsResource> changed = changedOnly();
      return changed == null ? Optional.empty() : Optional.of(new Outgoing(changed, latest.version(), latest, false));
    }
    List<XdsResource> resources = fullState();
    if (resources == null) {
      return Optional.empty();
    }
    List<XdsResource> removed = deferRemovals && lastSent != null ? removedSinceLastSent() : List.of();
    if (!removed.isEmpty()) {
      if (!addsOrChangesAnything(resources)) {
        return Optional.empty();
      }
      resources = new ArrayList<>(resources);
      resources.addAll(removed);
    }
    return Optional.of(new Outgoing(resources, Versions.ofResources(resources), latest, !removed.isEmpty()));
  }

  /** Marks {@code outgoing} as sent with {@code nonce}. */
  void sent(Outgoing outgoing, String nonce) {
    lastSent = outgoing.snapshot();
    removalsPending = outgoing.removalsDeferred();
    lastNonce = nonce;
    newlySubscribed.clear();
  }

  /** Resources of the last response that the client subscribes to and that are gone now. */
  private List<XdsResource> removedSinceLastSent() {
    Iterable<String> names = subscription.wildcard() ? lastSent.resources().keySet() : subscription.names();
    List<XdsResource> removed = new ArrayList<>();
    for (String name : names) {
      XdsResource had = lastSent.get(name);
      if (had != null && latest.get(name) == null) {
        removed.add(had);
      }
    }
    return removed;
  }

  private boolean addsOrChangesAnything(List<XdsResource> resources) {
    for (XdsResource resource : resources) {
      if (lastSent.get(resource.name()) != resource || newlySubscribed.contains(resource.name())) {
        return true;
      }
    }
    return false;
  }

  /**
   * Listener and Cluster: the complete state of what the client subscribed to, sent once every name
   * it asked for is known to exist or not, so that an absent resource means deleted ("Deleting
   * Resources") rather than not yet heard of.
   */
  private List<XdsResource> fullState() {
    if (subscription.wildcard() && !latest.isComplete()) {
      return null;
    }
    for (String name : subscription.names()) {
      if (latest.state(name) == NameState.UNKNOWN) {
        return null;
      }
    }
    if (lastSent != null && newlySubscribed.isEmpty() && !removalsPending && !scopeChanged()) {
      return null;
    }
    List<XdsResource> resources = new ArrayList<>();
    if (subscription.wildcard()) {
      resources.addAll(latest.resources().values());
    } else {
      for (String name : subscription.names()) {
        XdsResource resource = latest.get(name);
        if (resource != null) {
          resources.add(resource);
        }
      }
    }
    return resources;
  }

  private boolean scopeChanged() {
    if (subscription.wildcard()) {
      return lastSent != latest && !lastSent.version().equals(latest.version());
    }
    for (String name : subscription.names()) {
      if (lastSent.get(name) != latest.get(name)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Every other type: only resources that changed since the last response or were newly asked for
   * ("Grouping Resources into Responses"); SotW has no way to say a resource of these types is gone.
   */
  private List<XdsResource> changedOnly() {
    List<XdsResource> resources = new ArrayList<>();
    Iterable<String> names = subscription.wildcard() ? latest.resources().keySet() : subscription.names();
    for (String name : names) {
      XdsResource resource = latest.get(name);
      if (resource != null
          && (lastSent == null || lastSent.get(name) != resource || newlySubscribed.contains(name))) {
        resources.add(resource);
      }
    }
    return resources.isEmpty() ? null : resources;
  }
}
