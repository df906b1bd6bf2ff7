package io.xdsproxy.upstream.grpc;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.ResourceDecoder.DecodedBodies;
import io.xdsproxy.core.ResourceDecoder.InvalidResourceException;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource.UpstreamListener;
import io.xdsproxy.core.XdsResource;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * One node group's State-of-the-World ADS session with the control plane: a single {@code
 * StreamAggregatedResources} stream that asks for the union of what the group's clients want and
 * ACKs or NACKs every response.
 */
final class SotwUpstreamSession
    extends AdsSession<SotwRequest, SotwResponse, SotwUpstreamSession.SotwSubscriptionState> {

  /** One type's logical stream within the ADS stream. */
  static final class SotwSubscriptionState extends SubscriptionState {
    /** The version_info of the last response accepted; sent again on reconnect. */
    String acceptedVersion = "";

    // Per stream:
    String nonce = "";
    boolean requestedOnStream;
    boolean explicitOnStream;
    boolean answeredOnStream;
    Set<String> firstRequest = Set.of();

    /**
     * What the last response accepted decoded to, in its order, and the bytes each came in: the
     * next is compared with it position by position ({@link ResourceDecoder#decode(TypeUrl,
     * io.xdsproxy.core.EncodedBodies, java.util.function.Function, List, List)}).
     */
    List<XdsResource> lastResponse = List.of();

    List<byte[]> lastEncoded = List.of();

    /**
     * {@link #decodedEdits} once the last response was applied: while it still is, {@link
     * #lastResponse} is what {@link #decoded} holds under each name, and the next response is
     * compared with it without a lookup per resource (a tenth of a group's CPU for an update at
     * 1,000 groups). Anything else that changed what is held (names forgotten or found not to
     * exist) voids the comparison for one response, which is then decoded from what is held.
     */
    long editsOfLastResponse;

    /**
     * The names of {@link #wire} in the order requests send them, kept while the wire stays: each
     * ACK sends them again, and sorting a thousand names for each was a tenth of a group's work.
     */
    private Interest sortedWire;

    private List<String> sortedNames = List.of();

    /** {@link #sortedNames} and the type URL, encoded as a request carries them. */
    private ByteString asked = ByteString.EMPTY;

    SotwSubscriptionState(TypeUrl type) {
      super(type);
    }

    /** What a request names: {@link #wire}'s names, sorted; none for a wildcard. */
    List<String> requestNames() {
      if (wire != sortedWire) {
        sortedNames = wire.wildcard() ? List.of() : List.copyOf(new TreeSet<>(wire.names()));
        asked = SotwRequest.asked(type, sortedNames);
        sortedWire = wire;
      }
      return sortedNames;
    }

    /** {@link #requestNames()} and the type URL, encoded ({@link SotwRequest#asked}). */
    ByteString asked() {
      requestNames();
      return asked;
    }
  }

  SotwUpstreamSession(
      NodeGroupKey group,
      Node node,
      String tenant,
      UpstreamListener listener,
      SessionContext context) {
    super(group, node, tenant, listener, context, AdsCall.SOTW_ENCODED);
    this.nodeField = SotwRequest.node(node);
  }

  /** The node, encoded as every request carries it. */
  private final ByteString nodeField;

  @Override
  SotwSubscriptionState newTypeState(TypeUrl type) {
    return new SotwSubscriptionState(type);
  }

  @Override
  void streamOpened(Iterable<SotwSubscriptionState> types) {
    for (SotwSubscriptionState state : types) {
      state.nonce = "";
      state.requestedOnStream = false;
      state.explicitOnStream = false;
      state.answeredOnStream = false;
      state.firstRequest = Set.of();
      if (!state.awaitingFresh.isEmpty()) {
        // java-control-plane and go-control-plane up to v0.13 answer a wildcard on a new stream
        // only when its version is not theirs: a do_not_cache copy the group waits for must come
        // again.
        state.acceptedVersion = "";
      }
      request(state, null);
    }
  }

  /**
   * A SotW stream cannot take back a wildcard (istiod answers Listener and Cluster with everything
   * whatever the names, {@code IsWildcardTypeURL}), nor its last names: an empty list means every
   * resource of the type to java-control-plane ({@code SimpleCache.createResponse}), none to
   * go-control-plane ({@code Subscription}), and an unsubscription or a wildcard to istiod. Both
   * stay asked for, and the store keeps what they bring (interop.md rule 10).
   */
  @Override
  Interest expressible(TypeUrl type, Interest interest, Interest wire) {
    if (wire.wildcard()) {
      return new Interest(true, interest.names());
    }
    if (!interest.wildcard() && interest.names().isEmpty() && !wire.names().isEmpty()) {
      return wire;
    }
    return interest;
  }

  @Override
  void wireChanged(SotwSubscriptionState state, Interest previous) {
    Interest wire = state.wire;
    boolean asksForMore =
        wire.wildcard() && !previous.wildcard()
            || wire.names().stream().anyMatch(name -> !previous.names().contains(name));
    if (asksForMore) {
      // Rule 9: java-control-plane and go-control-plane up to v0.13 answer names asked for again,
      // after being dropped, and a wildcard on a new stream, only when the version differs from
      // theirs. istiod answers added names whatever the version; every one answers an empty
      // version.
      state.acceptedVersion = "";
    }
    if (isStreamOpen() && wire.wildcard() && !previous.wildcard() && state.explicitOnStream) {
      // Names were sent on this stream, so an empty list would now mean "nothing" to
      // go-control-plane, and java-control-plane takes "*" for a name: only a new stream's first
      // request is a wildcard.
      reopenStream("subscribing to every " + state.type.shortName() + " needs a new stream");
      return;
    }
    request(state, null);
  }

  /**
   * Rule 8: no single request makes every control plane resend what it already sent. The current
   * nonce with an empty version_info is a version mismatch to go-control-plane and
   * java-control-plane, which answer it, and an ACK to istiod, which never reads version_info
   * ({@code ShouldRespond}). An empty nonce is a new watch to istiod, which answers it with
   * everything asked for, and a stale request to the others, which ignore it ({@code sotw/v3/xds.go
   * process}, {@code DiscoveryRequestStreamObserver.onNext}). Each answers one.
   */
  @Override
  void askAgain(SotwSubscriptionState state) {
    state.acceptedVersion = "";
    request(state, null);
    String nonce = state.nonce;
    state.nonce = "";
    request(state, null);
    state.nonce = nonce;
  }

  @Override
  void onResponse(SotwResponse response) {
    Optional<SotwSubscriptionState> found = stateOfResponse(response.getTypeUrl());
    if (found.isEmpty()) {
      return;
    }
    SotwSubscriptionState state = found.get();
    boolean intact = state.decodedEdits == state.editsOfLastResponse;
    DecodedBodies decoded;
    try {
      decoded =
          ResourceDecoder.decode(
              state.type,
              response.resources(),
              state.decoded::get,
              intact ? state.lastResponse : List.of(),
              intact ? state.lastEncoded : List.of());
    } catch (InvalidResourceException e) {
      com.google.rpc.Status detail =
          rejection(state.type, "version " + response.getVersionInfo(), e.getMessage());
      logNack(state.type, detail);
      state.nonce = response.getNonce();
      request(state, detail);
      return;
    }
    healthy();
    state.lastResponse = decoded.resources();
    state.lastEncoded = decoded.encoded();
    ResourceUpdate update = toUpdate(state, decoded, Set.copyOf(decoded.heartbeats()));
    state.acceptedVersion = response.getVersionInfo();
    state.nonce = response.getNonce();
    state.answeredOnStream = true;
    request(state, null);
    state.editsOfLastResponse = publish(state, update);
  }

  /**
   * What a response means for the store. Listener and Cluster responses are complete ("Grouping
   * Resources into Responses"): for a wildcard, everything else is gone; for names, a name the
   * upstream had given and now leaves out is deleted, and so is one it leaves out of its first
   * answer on a stream, which can only answer the stream's first request. Other names it leaves out
   * may just not have been asked for yet when it answered ("Knowing When a Requested Resource Does
   * Not Exist"): the not-found timer decides them. A heartbeat stands for its resource ("SotW
   * TTL"), and a response of heartbeats alone only refreshes TTLs. A response of other types
   * updates the names it carries, and those the group holds as they are change nothing: the update
   * carries the others alone, so that a resend of a thousand assignments to change one costs the
   * group one.
   */
  private static ResourceUpdate toUpdate(
      SotwSubscriptionState state, DecodedBodies decoded, Set<String> heartbeats) {
    List<XdsResource> resources = decoded.resources();
    if (!state.type.isFullStateInSotw()) {
      return ResourceUpdate.partial(state.type, decoded.changed(), Set.of(), false)
          .withHeartbeats(heartbeats);
    }
    if (resources.isEmpty() && !heartbeats.isEmpty()) {
      return ResourceUpdate.partial(state.type, resources, Set.of(), false)
          .withHeartbeats(heartbeats);
    }
    if (state.wire.wildcard()) {
      return ResourceUpdate.complete(state.type, resources).withHeartbeats(heartbeats);
    }
    Set<String> names = new HashSet<>(heartbeats);
    resources.forEach(resource -> names.add(resource.name()));
    Set<String> removed = new HashSet<>();
    for (String name : state.wire.names()) {
      boolean answered =
          state.received.contains(name)
              || (!state.answeredOnStream && state.firstRequest.contains(name));
      if (answered && !names.contains(name)) {
        removed.add(name);
      }
    }
    return ResourceUpdate.partial(state.type, resources, removed, false).withHeartbeats(heartbeats);
  }

  /**
   * Sends the request that states {@code state}'s {@link SubscriptionState#wire}: an ACK when
   * {@code error} is null, a NACK otherwise. A wildcard is sent the legacy way, with no names ("How
   * the client specifies what resources to return"): every control plane understands it, where some
   * (java-control-plane) take {@code *} for a resource name. Names asked for beside a wildcard are
   * not sent: for Listener and Cluster the wildcard is everything the node may have, and a name it
   * leaves out does not exist.
   */
  private void request(SotwSubscriptionState state, com.google.rpc.Status error) {
    if (!isStreamOpen()) {
      return;
    }
    Interest wire = state.wire;
    List<String> names = state.requestNames();
    if (names.isEmpty() && !wire.wildcard()) {
      // Nothing asked for: an empty request would be a legacy wildcard (expressible never empties a
      // list once names were sent).
      return;
    }
    // Only the first request must carry the node, but some control planes (java-control-plane
    // among them) read it from every request; one session per group makes the bytes negligible.
    SotwRequest request =
        SotwRequest.of(state.acceptedVersion, nodeField, state.asked(), state.nonce, error);
    if (!state.requestedOnStream) {
      state.firstRequest = Set.copyOf(wire.names());
    }
    state.requestedOnStream = true;
    state.explicitOnStream |= !names.isEmpty();
    send(request);
  }
}
