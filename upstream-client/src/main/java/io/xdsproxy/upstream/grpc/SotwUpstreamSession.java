package io.xdsproxy.upstream.grpc;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.ResourceDecoder.Decoded;
import io.xdsproxy.core.ResourceDecoder.InvalidResourceException;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.SerialExecutor;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource.UpstreamListener;
import io.xdsproxy.core.UpstreamSource.UpstreamSession;
import io.xdsproxy.core.XdsResource;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.random.RandomGenerator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One node group's State-of-the-World ADS session with the control plane: a single
 * {@code StreamAggregatedResources} stream, reopened with backoff when it fails, that asks for the
 * union of what the group's clients want and ACKs or NACKs every response.
 *
 * <p>All state is confined to the session's {@link SerialExecutor}; gRPC callbacks and timers only
 * enqueue onto it.
 */
final class SotwUpstreamSession implements UpstreamSession {

  private static final Logger log = LoggerFactory.getLogger(SotwUpstreamSession.class);

  private final NodeGroupKey group;
  private final Node node;
  private final Channel channel;
  private final String target;
  private final UpstreamListener listener;
  private final SerialExecutor executor;
  private final ScheduledExecutorService timer;
  private final Backoff backoff;
  private final Duration notFoundTimeout;
  private final RandomGenerator random;

  // Confined to the executor.
  private final Map<TypeUrl, TypeState> types = new TreeMap<>();
  private ClientCallStreamObserver<DiscoveryRequest> stream;
  /** Counts streams, so callbacks of an abandoned stream are told apart and ignored. */
  private int generation;
  private int failedAttempts;
  private boolean closed;

  SotwUpstreamSession(
      NodeGroupKey group,
      Node node,
      Channel channel,
      String target,
      UpstreamListener listener,
      Executor pool,
      ScheduledExecutorService timer,
      Backoff backoff,
      Duration notFoundTimeout,
      RandomGenerator random) {
    this.group = group;
    this.node = node;
    this.channel = channel;
    this.target = target;
    this.listener = listener;
    this.executor = new SerialExecutor(pool, "upstream session of group " + group);
    this.timer = timer;
    this.backoff = backoff;
    this.notFoundTimeout = notFoundTimeout;
    this.random = random;
    executor.execute(this::openStream);
  }

  @Override
  public void updateInterest(TypeUrl type, Interest interest) {
    executor.execute(() -> {
      if (closed) {
        return;
      }
      TypeState state = types.computeIfAbsent(type, TypeState::new);
      Interest previous = state.interest;
      state.interest = interest;
      forgetWhatIsNoLongerWanted(state, previous);
      boolean asksForMore = interest.wildcard() && !previous.wildcard();
      for (String name : interest.names()) {
        if (!state.received.contains(name)) {
          asksForMore = true;
          if (!previous.names().contains(name)) {
            armNotFoundTimer(state, name);
          }
        }
      }
      if (asksForMore) {
        // "The server must resend any newly requested resources": servers that answer only when the
        // request's version differs from theirs need an empty version to do so.
        state.acceptedVersion = "";
      }
      if (stream != null && interest.wildcard() && !previous.wildcard() && state.explicitOnStream) {
        // Names were sent on this stream, so an empty list would now mean "nothing": a new stream
        // is the only way to ask for the legacy wildcard.
        log.info("group {}: reopening the stream to {} to subscribe to every {}", group, target, type.shortName());
        reopenStream();
      } else if (stream != null) {
        send(state, null);
      }
    });
  }

  private void reopenStream() {
    stream.cancel("resubscribing with a wildcard", null);
    stream = null;
    openStream();
  }

  @Override
  public void close() {
    executor.execute(() -> {
      closed = true;
      if (stream != null) {
        stream.cancel("node group " + group + " closed", null);
        stream = null;
      }
    });
  }

  private void openStream() {
    if (closed) {
      return;
    }
    int streamGeneration = ++generation;
    types.values().forEach(TypeState::newStream);
    AggregatedDiscoveryServiceGrpc.newStub(channel).streamAggregatedResources(
        new ClientResponseObserver<DiscoveryRequest, DiscoveryResponse>() {
          @Override
          public void beforeStart(ClientCallStreamObserver<DiscoveryRequest> requests) {
            stream = requests;
          }

          @Override
          public void onNext(DiscoveryResponse response) {
            executor.execute(() -> {
              if (streamGeneration == generation && !closed) {
                onResponse(response);
              }
            });
          }

          @Override
          public void onError(Throwable t) {
            executor.execute(() -> onStreamEnd(streamGeneration, Status.fromThrowable(t)));
          }

          @Override
          public void onCompleted() {
            executor.execute(() -> onStreamEnd(streamGeneration, Status.UNAVAILABLE.withDescription("closed by the server")));
          }
        });
    for (TypeState state : types.values()) {
      send(state, null);
    }
  }

  private void onStreamEnd(int streamGeneration, Status status) {
    if (streamGeneration != generation || closed) {
      return;
    }
    stream = null;
    failedAttempts++;
    Duration delay = backoff.delay(failedAttempts, random);
    log.warn("group {}: upstream stream to {} ended ({}: {}); reconnecting in {} ms, the last good state is served meanwhile",
        group, target, status.getCode(), status.getDescription(), delay.toMillis());
    timer.schedule(() -> executor.execute(this::openStream), delay.toMillis(), TimeUnit.MILLISECONDS);
  }

  private void onResponse(DiscoveryResponse response) {
    failedAttempts = 0;
    TypeUrl type;
    try {
      type = TypeUrl.parse(response.getTypeUrl());
    } catch (IllegalArgumentException e) {
      log.warn("group {}: upstream {} sent a response with a bad type_url, ignored: {}", group, target, e.getMessage());
      return;
    }
    TypeState state = types.get(type);
    if (state == null) {
      log.warn("group {}: upstream {} sent {} which the proxy never asked for; ignored", group, target, type);
      return;
    }
    Decoded decoded;
    try {
      decoded = ResourceDecoder.decode(type, response.getResourcesList());
    } catch (InvalidResourceException e) {
      String detail = type.shortName() + " version " + response.getVersionInfo() + " rejected by xds-proxy: " + e.getMessage();
      log.warn("group {}: NACK to upstream {}: {}", group, target, detail);
      state.nonce = response.getNonce();
      send(state, com.google.rpc.Status.newBuilder()
          .setCode(Status.Code.INVALID_ARGUMENT.value())
          .setMessage(detail)
          .build());
      return;
    }
    ResourceUpdate update = toUpdate(state, decoded.resources());
    state.acceptedVersion = response.getVersionInfo();
    state.nonce = response.getNonce();
    state.answeredOnStream = true;
    send(state, null);
    listener.onUpdate(update);
  }

  /**
   * What a response means for the store. Listener and Cluster responses are complete ("Grouping
   * Resources into Responses"): for a wildcard, everything else is gone; for names, a name the
   * upstream had given and now leaves out is deleted, and so is one it leaves out of its first answer
   * on a stream, which can only answer the stream's first request. Other names it leaves out may just
   * not have been asked for yet when it answered ("Knowing When a Requested Resource Does Not Exist"):
   * the not-found timer decides them.
   */
  private ResourceUpdate toUpdate(TypeState state, List<XdsResource> resources) {
    TypeUrl type = state.type;
    Set<String> names = new HashSet<>();
    resources.forEach(resource -> names.add(resource.name()));
    ResourceUpdate update;
    if (!type.isFullStateInSotw()) {
      update = ResourceUpdate.partial(type, resources, Set.of(), false);
    } else if (state.interest.wildcard()) {
      update = ResourceUpdate.complete(type, resources);
    } else {
      Set<String> removed = new HashSet<>();
      for (String name : state.interest.names()) {
        boolean answered = state.received.contains(name) || (!state.answeredOnStream && state.firstRequest.contains(name));
        if (answered && !names.contains(name)) {
          removed.add(name);
        }
      }
      update = ResourceUpdate.partial(type, resources, removed, false);
    }
    if (update.replaceAll()) {
      state.received.clear();
    }
    state.received.removeAll(update.removed());
    state.received.addAll(names);
    return update;
  }

  private void forgetWhatIsNoLongerWanted(TypeState state, Interest previous) {
    if (state.interest.wildcard()) {
      return;
    }
    Set<String> unwanted = new HashSet<>(previous.wildcard() ? state.received : previous.names());
    unwanted.removeAll(state.interest.names());
    if (!unwanted.isEmpty()) {
      state.received.removeAll(unwanted);
      listener.onUpdate(ResourceUpdate.forget(state.type, unwanted));
    }
  }

  private void armNotFoundTimer(TypeState state, String name) {
    timer.schedule(() -> executor.execute(() -> {
      if (!closed && state.interest.names().contains(name) && !state.received.contains(name)) {
        log.info("group {}: upstream {} has not sent {} '{}' within {}; it is taken not to exist",
            group, target, state.type.shortName(), name, notFoundTimeout);
        listener.onUpdate(ResourceUpdate.partial(state.type, List.of(), Set.of(name), false));
      }
    }), notFoundTimeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * Sends the request that states {@code state}'s subscription: an ACK when {@code error} is null, a
   * NACK otherwise. A wildcard is sent the legacy way, with no names ("How the client specifies what
   * resources to return"): every control plane understands it, where some (java-control-plane) take
   * {@code *} for a resource name. Names asked for beside a wildcard are not sent: for Listener and
   * Cluster the wildcard is everything the node may have, and a name it leaves out does not exist.
   */
  private void send(TypeState state, com.google.rpc.Status error) {
    if (stream == null) {
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
        .addAllResourceNames(names);
    // Only the first request must carry the node, but some control planes (java-control-plane among
    // them) read it from every request; one session per group makes the bytes negligible.
    request.setNode(node);
    if (error != null) {
      request.setErrorDetail(error);
    }
    if (!state.requestedOnStream) {
      state.firstRequest = Set.copyOf(interest.names());
    }
    state.requestedOnStream = true;
    state.explicitOnStream |= !names.isEmpty();
    stream.onNext(request.build());
  }

  /** One type's logical stream within the ADS stream. */
  private static final class TypeState {
    final TypeUrl type;
    Interest interest = Interest.NONE;
    /** The version_info of the last response accepted; sent again on reconnect. */
    String acceptedVersion = "";
    String nonce = "";
    /** Names the upstream has sent and not deleted since. */
    final Set<String> received = new HashSet<>();
    // Per stream:
    boolean requestedOnStream;
    boolean explicitOnStream;
    boolean answeredOnStream;
    Set<String> firstRequest = Set.of();

    TypeState(TypeUrl type) {
      this.type = type;
    }

    void newStream() {
      nonce = "";
      requestedOnStream = false;
      explicitOnStream = false;
      answeredOnStream = false;
      firstRequest = Set.of();
    }
  }
}
