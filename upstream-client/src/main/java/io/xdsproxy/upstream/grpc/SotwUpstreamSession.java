package io.xdsproxy.upstream.grpc;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Channel;
import io.grpc.stub.ClientResponseObserver;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.ResourceDecoder.Decoded;
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
 * One node group's State-of-the-World ADS session with the control plane: a single
 * {@code StreamAggregatedResources} stream that asks for the union of what the group's clients want
 * and ACKs or NACKs every response.
 */
final class SotwUpstreamSession
    extends AdsSession<DiscoveryRequest, DiscoveryResponse, SotwUpstreamSession.SotwTypeState> {

  /** One type's logical stream within the ADS stream. */
  static final class SotwTypeState extends AdsSession.TypeState {
    /** The version_info of the last response accepted; sent again on reconnect. */
    String acceptedVersion = "";
    // Per stream:
    String nonce = "";
    boolean requestedOnStream;
    boolean explicitOnStream;
    boolean answeredOnStream;
    Set<String> firstRequest = Set.of();

    SotwTypeState(TypeUrl type) {
      super(type);
    }
  }

  SotwUpstreamSession(NodeGroupKey group, Node node, UpstreamListener listener, Context context) {
    super(group, node, listener, context);
  }

  @Override
  SotwTypeState newTypeState(TypeUrl type) {
    return new SotwTypeState(type);
  }

  @Override
  void startCall(Channel channel, ClientResponseObserver<DiscoveryRequest, DiscoveryResponse> observer) {
    AggregatedDiscoveryServiceGrpc.newStub(channel).streamAggregatedResources(observer);
  }

  @Override
  void streamOpened(Iterable<SotwTypeState> types) {
    for (SotwTypeState state : types) {
      state.nonce = "";
      state.requestedOnStream = false;
      state.explicitOnStream = false;
      state.answeredOnStream = false;
      state.firstRequest = Set.of();
      request(state, null);
    }
  }

  @Override
  void interestChanged(SotwTypeState state, Interest previous) {
    Interest interest = state.interest;
    boolean asksForMore = interest.wildcard() && !previous.wildcard()
        || interest.names().stream().anyMatch(name -> !state.received.contains(name));
    if (asksForMore) {
      // "The server must resend any newly requested resources": servers that answer only when the
      // request's version differs from theirs need an empty version to do so.
      state.acceptedVersion = "";
    }
    if (isStreamOpen() && interest.wildcard() && !previous.wildcard() && state.explicitOnStream) {
      // Names were sent on this stream, so an empty list would now mean "nothing".
      reopenStream("subscribing to every " + state.type.shortName() + " needs a new stream");
    } else {
      request(state, null);
    }
  }

  @Override
  void askAgain(SotwTypeState state) {
    // A control plane answers a request whose version is not its own.
    state.acceptedVersion = "";
    request(state, null);
  }

  @Override
  void onResponse(DiscoveryResponse response) {
    Optional<SotwTypeState> found = stateOfResponse(response.getTypeUrl());
    if (found.isEmpty()) {
      return;
    }
    SotwTypeState state = found.get();
    Decoded decoded;
    try {
      decoded = ResourceDecoder.decode(state.type, response.getResourcesList(), state.decoded::get);
    } catch (InvalidResourceException e) {
      com.google.rpc.Status detail = rejection(state.type, "version " + response.getVersionInfo(), e.getMessage());
      logNack(detail);
      state.nonce = response.getNonce();
      request(state, detail);
      return;
    }
    healthy();
    ResourceUpdate update = toUpdate(state, decoded.resources(), Set.copyOf(decoded.heartbeats()));
    state.acceptedVersion = response.getVersionInfo();
    state.nonce = response.getNonce();
    state.answeredOnStream = true;
    request(state, null);
    publish(state, update);
  }

  /**
   * What a response means for the store. Listener and Cluster responses are complete ("Grouping
   * Resources into Responses"): for a wildcard, everything else is gone; for names, a name the
   * upstream had given and now leaves out is deleted, and so is one it leaves out of its first answer
   * on a stream, which can only answer the stream's first request. Other names it leaves out may just
   * not have been asked for yet when it answered ("Knowing When a Requested Resource Does Not Exist"):
   * the not-found timer decides them. A heartbeat stands for its resource ("SotW TTL"), and a
   * response of heartbeats alone only refreshes TTLs.
   */
  private static ResourceUpdate toUpdate(SotwTypeState state, List<XdsResource> resources, Set<String> heartbeats) {
    if (!state.type.isFullStateInSotw() || resources.isEmpty() && !heartbeats.isEmpty()) {
      return ResourceUpdate.partial(state.type, resources, Set.of(), false).withHeartbeats(heartbeats);
    }
    if (state.interest.wildcard()) {
      return ResourceUpdate.complete(state.type, resources).withHeartbeats(heartbeats);
    }
    Set<String> names = new HashSet<>(heartbeats);
    resources.forEach(resource -> names.add(resource.name()));
    Set<String> removed = new HashSet<>();
    for (String name : state.interest.names()) {
      boolean answered = state.received.contains(name) || (!state.answeredOnStream && state.firstRequest.contains(name));
      if (answered && !names.contains(name)) {
        removed.add(name);
      }
    }
    return ResourceUpdate.partial(state.type, resources, removed, false).withHeartbeats(heartbeats);
  }

  /**
   * Sends the request that states {@code state}'s subscription: an ACK when {@code error} is null, a
   * NACK otherwise. A wildcard is sent the legacy way, with no names ("How the client specifies what
   * resources to return"): every control plane understands it, where some (java-control-plane) take
   * {@code *} for a resource name. Names asked for beside a wildcard are not sent: for Listener and
   * Cluster the wildcard is everything the node may have, and a name it leaves out does not exist.
   */
  private void request(SotwTypeState state, com.google.rpc.Status error) {
    if (!isStreamOpen()) {
      return;
    }
    Interest interest = state.interest;
    List<String> names = interest.wildcard() ? List.of() : List.copyOf(new TreeSet<>(interest.names()));
    if (names.isEmpty() && !interest.wildcard() && !state.explicitOnStream) {
      // Nothing wanted and nothing asked on this stream: an empty request would be a legacy wildcard.
      return;
    }
    DiscoveryRequest.Builder request = DiscoveryRequest.newBuilder()
        .setTypeUrl(state.type.url())
        .setVersionInfo(state.acceptedVersion)
        .setResponseNonce(state.nonce)
        .addAllResourceNames(names)
        // Only the first request must carry the node, but some control planes (java-control-plane
        // among them) read it from every request; one session per group makes the bytes negligible.
        .setNode(node);
    if (error != null) {
      request.setErrorDetail(error);
    }
    if (!state.requestedOnStream) {
      state.firstRequest = Set.copyOf(interest.names());
    }
    state.requestedOnStream = true;
    state.explicitOnStream |= !names.isEmpty();
    send(request.build());
  }
}
