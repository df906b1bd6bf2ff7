package io.xdsproxy.upstream.testing;

import com.google.protobuf.Message;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.core.TypeUrl;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * The model of Envoy's state-of-the-world ADS mux, {@code GrpcMuxImpl}
 * (source/extensions/config_subscription/grpc/grpc_mux_impl.cc and .h, the mux Envoy uses while
 * {@code envoy.reloadable_features.unified_mux} is off, its default). One {@code ApiState} per type
 * holds the request that is re-sent whole each time: the union of the watches' names, the last
 * accepted version_info, the last nonce, and an error_detail for a NACK. Confined to the client's
 * main thread.
 */
final class EnvoySotwMux implements EnvoyMux {

  private final Node node;

  /**
   * {@code ApiConfigSource.set_node_on_first_message_only}, the constructor's {@code
   * skip_subsequent_node}.
   */
  private final boolean skipSubsequentNode;

  /**
   * Envoy before 1.28 kept the old stream's nonces on a new stream (envoy#30155,
   * changelogs/1.28.0.yaml).
   */
  private final boolean keepNoncesAcrossStreams;

  private final EdsCache edsCache;
  private final Consumer<String> log;

  /** {@code api_state_}: created on first use, by a watch or by a pause. */
  private final Map<String, ApiState> apiStates = new HashMap<>();

  /**
   * {@code subscriptions_}: types in the order of their first watch, which is the order they are
   * re-requested on a new stream.
   */
  private final List<String> subscriptions = new ArrayList<>();

  private final ArrayDeque<String> requestQueue = new ArrayDeque<>();
  private boolean firstStreamRequest = true;

  /**
   * Writes to the current stream; null while there is none (then requests are dropped, {@code
   * queueDiscoveryRequest}).
   */
  private Consumer<Message> stream;

  EnvoySotwMux(
      Node node,
      boolean skipSubsequentNode,
      boolean keepNoncesAcrossStreams,
      EdsCache edsCache,
      Consumer<String> log) {
    this.node = node;
    this.skipSubsequentNode = skipSubsequentNode;
    this.keepNoncesAcrossStreams = keepNoncesAcrossStreams;
    this.edsCache = edsCache;
    this.log = log;
  }

  /** {@code GrpcMuxImpl::ApiState}. */
  private static final class ApiState {
    /**
     * {@code watches_}: a new watch goes to the front ({@code GrpcMuxWatchImpl::updateResources}),
     * so its names lead the request.
     */
    final List<SotwWatch> watches = new ArrayList<>();

    /**
     * The type URL of {@code request_}: set by the first watch only; a state made by a pause has
     * none.
     */
    String requestTypeUrl = "";

    String versionInfo = "";
    String nonce = "";
    com.google.rpc.Status errorDetail;
    int pauses;
    boolean pending;
    boolean subscribed;

    boolean paused() {
      return pauses > 0;
    }
  }

  /**
   * {@code GrpcMuxWatchImpl}: its names kept sorted, as its {@code std::set<std::string>
   * resources_}.
   */
  private final class SotwWatch implements Watch {
    final String typeUrl;
    final SortedSet<String> names;
    final SubscriptionCallbacks callbacks;
    boolean removed;

    SotwWatch(String typeUrl, Set<String> names, SubscriptionCallbacks callbacks) {
      this.typeUrl = typeUrl;
      this.names = new TreeSet<>(names);
      this.callbacks = callbacks;
    }

    /**
     * {@code ~GrpcMuxWatchImpl}: a watch with names that goes away re-sends the type's request
     * without them.
     */
    @Override
    public void remove() {
      if (removed) {
        return;
      }
      removed = true;
      apiStateFor(typeUrl).watches.remove(this);
      if (!names.isEmpty()) {
        queueDiscoveryRequest(typeUrl);
        if (edsCache != null && typeUrl.equals(TypeUrl.ENDPOINT.url())) {
          names.stream().filter(name -> !watchedByAnother(name, this)).forEach(edsCache::remove);
        }
      }
    }
  }

  private boolean watchedByAnother(String name, SotwWatch watch) {
    return apiStateFor(TypeUrl.ENDPOINT.url()).watches.stream()
        .anyMatch(other -> other != watch && other.names.contains(name));
  }

  private ApiState apiStateFor(String typeUrl) {
    return apiStates.computeIfAbsent(typeUrl, t -> new ApiState());
  }

  /**
   * {@code GrpcMuxImpl::addWatch}: the first watch of a type subscribes it (and fixes its place in
   * {@code subscriptions_}); every new watch queues a request ("This will send an updated request
   * on each subscription"), which a paused type holds as pending.
   */
  @Override
  public Watch addWatch(TypeUrl type, Set<String> names, SubscriptionCallbacks callbacks) {
    SotwWatch watch = new SotwWatch(type.url(), names, callbacks);
    ApiState state = apiStateFor(type.url());
    state.watches.add(0, watch);
    if (!state.subscribed) {
      state.requestTypeUrl = type.url();
      state.subscribed = true;
      subscriptions.add(type.url());
    }
    queueDiscoveryRequest(type.url());
    return watch;
  }

  /**
   * {@code GrpcMuxImpl::pause}: on the last resume a pending request of a subscribed type is
   * queued.
   */
  @Override
  public Resume pause(TypeUrl... types) {
    for (TypeUrl type : types) {
      apiStateFor(type.url()).pauses++;
    }
    boolean[] resumed = {false};
    return () -> {
      if (resumed[0]) {
        return;
      }
      resumed[0] = true;
      for (TypeUrl type : types) {
        ApiState state = apiStateFor(type.url());
        if (--state.pauses == 0 && state.pending && state.subscribed) {
          queueDiscoveryRequest(type.url());
          state.pending = false;
        }
      }
    };
  }

  /**
   * {@code GrpcMuxImpl::onStreamEstablished}: the node goes on the first request again, {@code
   * clearNonce()} empties every nonce (Envoy 1.28 on), version_info is kept, and a request is
   * queued for every subscribed type in {@code subscriptions_} order; a paused type only marks it
   * pending.
   */
  @Override
  public void onStreamEstablished(Consumer<Message> sender) {
    stream = sender;
    firstStreamRequest = true;
    if (!keepNoncesAcrossStreams) {
      apiStates.values().forEach(state -> state.nonce = "");
    }
    requestQueue.clear();
    List.copyOf(subscriptions).forEach(this::queueDiscoveryRequest);
  }

  @Override
  public void onStreamClosed() {
    stream = null;
  }

  /**
   * {@code GrpcMuxImpl::queueDiscoveryRequest}: dropped with no stream, pending while paused, else
   * sent.
   */
  private void queueDiscoveryRequest(String typeUrl) {
    if (stream == null) {
      return;
    }
    ApiState state = apiStateFor(typeUrl);
    if (state.paused()) {
      state.pending = true;
      return;
    }
    requestQueue.add(typeUrl);
    while (!requestQueue.isEmpty()) {
      sendDiscoveryRequest(requestQueue.poll());
    }
  }

  /**
   * {@code GrpcMuxImpl::sendDiscoveryRequest}: resource_names is the union of the watches' names in
   * watch order without duplicates; the node only on a stream's first request when {@code
   * set_node_on_first_message_only}; error_detail is cleared once it has been sent.
   */
  private void sendDiscoveryRequest(String typeUrl) {
    ApiState state = apiStateFor(typeUrl);
    Set<String> names = new LinkedHashSet<>();
    state.watches.forEach(watch -> names.addAll(watch.names));
    DiscoveryRequest.Builder request =
        DiscoveryRequest.newBuilder()
            .setVersionInfo(state.versionInfo)
            .addAllResourceNames(names)
            .setTypeUrl(state.requestTypeUrl)
            .setResponseNonce(state.nonce);
    if (state.errorDetail != null) {
      request.setErrorDetail(state.errorDetail);
    }
    if (!skipSubsequentNode || firstStreamRequest) {
      request.setNode(node);
    }
    stream.accept(request.build());
    firstStreamRequest = false;
    state.errorDetail = null;
  }

  /**
   * {@code GrpcMuxImpl::onDiscoveryResponse}. A type never seen is dropped. A type with no watches
   * takes the nonce, and with no resources the version too; with resources it logs "Ignoring
   * unwatched type URL" and re-sends the request with the old version (a version-based server
   * answers again: envoy#10046). Otherwise the type is paused while the resources go to the
   * watches; success sets version_info, a failure sets error_detail (INTERNAL) and tells every
   * watch; the new nonce is taken either way and the request re-sent (the ACK or NACK) when the
   * pause ends.
   */
  @Override
  public void onResponse(Message message) {
    DiscoveryResponse response = (DiscoveryResponse) message;
    String typeUrl = response.getTypeUrl();
    ApiState state = apiStates.get(typeUrl);
    if (state == null) {
      log.accept(
          "Ignoring the message for type URL " + typeUrl + " as it has no current subscribers");
      return;
    }
    if (state.watches.isEmpty()) {
      state.nonce = response.getNonce();
      if (response.getResourcesCount() == 0) {
        state.versionInfo = response.getVersionInfo();
      } else {
        log.accept("Ignoring unwatched type URL " + EnvoyMux.shortType(typeUrl));
        queueDiscoveryRequest(typeUrl);
      }
      return;
    }
    Resume sameType = pause(TypeUrl.parse(typeUrl));
    try {
      List<DecodedResource> resources = new ArrayList<>();
      for (var any : response.getResourcesList()) {
        DecodedResource resource =
            DecodedResource.fromSotw(TypeUrl.parse(typeUrl), any, response.getVersionInfo());
        // GrpcMuxImpl::isHeartbeatResource: no body, and the version already accepted.
        if (resource.resource() != null || !resource.version().equals(state.versionInfo)) {
          resources.add(resource);
        }
      }
      processDiscoveryResources(typeUrl, state, resources, response.getVersionInfo());
    } catch (RejectedUpdate rejected) {
      for (SotwWatch watch : List.copyOf(state.watches)) {
        if (!watch.removed) {
          watch.callbacks.onConfigUpdateFailed(FailureReason.UPDATE_REJECTED);
        }
      }
      state.errorDetail =
          com.google.rpc.Status.newBuilder()
              .setCode(io.grpc.Status.Code.INTERNAL.value())
              .setMessage(rejected.getMessage())
              .build();
    }
    state.nonce = response.getNonce();
    queueDiscoveryRequest(typeUrl);
    sameType.run();
  }

  /**
   * {@code GrpcMuxImpl::processDiscoveryResources}: a watch without names (CDS, LDS) always gets
   * the whole response, even an empty one, as the state of the world; a watch with names gets only
   * the resources it names, and nothing at all when the response has none of them ("onConfigUpdate
   * should be called only on watches(clusters/listeners) that have updates in the message for
   * EDS/RDS"). A watch removed by an earlier watch's update is not called (it has left {@code
   * watches_}).
   */
  private void processDiscoveryResources(
      String typeUrl, ApiState state, List<DecodedResource> resources, String versionInfo) {
    Map<String, DecodedResource> byName = new LinkedHashMap<>();
    resources.forEach(resource -> byName.putIfAbsent(resource.name(), resource));
    for (SotwWatch watch : List.copyOf(state.watches)) {
      if (watch.removed) {
        continue;
      }
      if (watch.names.isEmpty()) {
        watch.callbacks.onConfigUpdate(resources, versionInfo);
        continue;
      }
      List<DecodedResource> found =
          watch.names.stream().filter(byName::containsKey).map(byName::get).toList();
      if (!found.isEmpty()) {
        watch.callbacks.onConfigUpdate(found, versionInfo);
        if (edsCache != null && typeUrl.equals(TypeUrl.ENDPOINT.url())) {
          found.forEach(
              resource ->
                  edsCache.put(resource.name(), (ClusterLoadAssignment) resource.resource()));
        }
      }
    }
    state.versionInfo = versionInfo;
  }

  /**
   * The EDS cache of {@code envoy.restart_features.use_eds_cache_for_ads} ({@code
   * EdsResourcesCacheImpl}): the last assignment of each watched EDS name, dropped when no watch
   * names it any more. A cluster whose initial fetch times out uses it ({@code
   * EdsClusterImpl::onConfigUpdateFailed}).
   */
  static final class EdsCache {
    private final Map<String, ClusterLoadAssignment> assignments = new HashMap<>();

    void put(String name, ClusterLoadAssignment assignment) {
      assignments.put(name, assignment);
    }

    void remove(String name) {
      assignments.remove(name);
    }

    ClusterLoadAssignment get(String name) {
      return assignments.get(name);
    }
  }
}
