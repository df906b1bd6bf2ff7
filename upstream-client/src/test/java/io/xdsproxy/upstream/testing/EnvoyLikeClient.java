package io.xdsproxy.upstream.testing;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Struct;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.BuildVersion;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.envoyproxy.envoy.type.v3.SemanticVersion;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.TypeUrl;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.stream.Collectors;

/**
 * Envoy's xDS client, as a model the suite can run: a real ADS stream (SotW or Delta) on a
 * grpc-java channel whose every request follows the Envoy source, file and function cited where
 * each rule is implemented.
 *
 * <ul>
 *   <li>the mux: {@link EnvoySotwMux} ({@code GrpcMuxImpl}) or {@link EnvoyDeltaMux} ({@code
 *       NewGrpcMuxImpl}, {@code DeltaSubscriptionState}, {@code WatchMap});
 *   <li>clusters: {@link EnvoyClusterManager} ({@code ClusterManagerImpl}, {@code CdsApiHelper},
 *       {@code EdsClusterImpl}): a new or changed EDS cluster warms until an assignment for its EDS
 *       name arrives after the change, and CDS is paused meanwhile;
 *   <li>start-up ({@code RunHelper} in source/server/server.cc, run by {@code InstanceImpl::run}):
 *       LDS is requested only once every initial cluster is initialized; then RDS for the route
 *       names the listeners' HttpConnectionManagers name ({@link EnvoyListenerManager}).
 * </ul>
 *
 * <p>Everything the model does runs on one thread of its own, as Envoy's main thread; the query
 * methods read an immutable view published after each step, so a test may poll them from any
 * thread:
 *
 * <pre>{@code
 * // java-control-plane groups each request by its own node: send it on every one.
 * try (EnvoyLikeClient envoy = EnvoyLikeClient.sotw().nodeCluster("fleet").nodeOnFirstMessageOnly(false)
 *     .start(controlPlane.target())) {
 *   await().atMost(WAIT).until(envoy::initialized);
 *   Instant change = Instant.now();
 *   controlPlane.setSnapshot("fleet", withChangedCluster);
 *   await().atMost(Duration.ofSeconds(1)).until(() -> envoy.warmedByAssignmentSince(change, "c-1"));
 * }
 * }</pre>
 */
public final class EnvoyLikeClient implements AutoCloseable {

  /** The ADS variant: {@code api_type: AGGREGATED_GRPC} or {@code AGGREGATED_DELTA_GRPC}. */
  public enum Mode {
    SOTW,
    DELTA
  }

  /** What ended a cluster's warming (or a bootstrap cluster's initialization). */
  public enum WarmCause {
    /** A ClusterLoadAssignment for its EDS name arrived. */
    ASSIGNMENT,
    /** Delta: the server listed its EDS name in removed_resources; no hosts. */
    REMOVED_BY_SERVER,
    /** initial_fetch_timeout elapsed without an assignment; no hosts. */
    INITIAL_FETCH_TIMEOUT,
    /**
     * initial_fetch_timeout elapsed; the EDS cache ({@code use_eds_cache_for_ads}) supplied the
     * last assignment.
     */
    INITIAL_FETCH_TIMEOUT_CACHED,
    /**
     * An EDS response was rejected (NACKed): every warming EDS cluster completes, without hosts.
     */
    REJECTED_UPDATE,
    /** Not an EDS cluster: nothing to wait for. */
    NO_EDS
  }

  /**
   * One cluster finishing its warming: when it began (the Cluster was applied), when it ended, why,
   * and with how many hosts.
   */
  public record ClusterWarming(
      String cluster, Instant startedAt, Instant warmedAt, WarmCause cause, int hosts) {
    @Override
    public String toString() {
      return cluster + " warm by " + cause + " with " + hosts + " host(s)";
    }
  }

  /** A client of Envoy's SotW ADS. */
  public static Builder sotw() {
    return new Builder(Mode.SOTW);
  }

  /** A client of Envoy's Delta ADS. */
  public static Builder delta() {
    return new Builder(Mode.DELTA);
  }

  /** The bootstrap, as much of it as the model reads. */
  public static final class Builder {
    private static final AtomicInteger IDS = new AtomicInteger();
    private final Mode mode;
    private String nodeId = "envoy-like-" + IDS.incrementAndGet();
    private String nodeCluster = "envoy-like";
    private Struct metadata = Struct.getDefaultInstance();
    private final List<String> clientFeatures = new ArrayList<>();
    private SemanticVersion envoyVersion =
        SemanticVersion.newBuilder().setMajorNumber(1).setMinorNumber(31).build();
    private boolean nodeOnFirstMessageOnly = true;
    private boolean keepNoncesAcrossStreams;
    private boolean edsCacheForAds;
    private Duration initialFetchTimeout = Duration.ZERO;
    private Duration reconnectAfter;
    private final List<Cluster> bootstrapClusters = new ArrayList<>();

    private Builder(Mode mode) {
      this.mode = mode;
    }

    public Builder nodeId(String id) {
      this.nodeId = id;
      return this;
    }

    /** node.cluster: the group a control plane serves this node as. */
    public Builder nodeCluster(String cluster) {
      this.nodeCluster = cluster;
      return this;
    }

    public Builder metadata(Struct metadata) {
      this.metadata = metadata;
      return this;
    }

    /**
     * node.client_features from the bootstrap. Envoy adds none of its own to the ADS node (only LRS
     * adds "envoy.lrs.supports_send_all_clusters" to its own copy, load_stats_reporter.cc).
     */
    public Builder clientFeature(String feature) {
      clientFeatures.add(feature);
      return this;
    }

    /** node.user_agent_build_version; 1.31 by default, whose defaults the other options match. */
    public Builder envoyVersion(int major, int minor) {
      this.envoyVersion =
          SemanticVersion.newBuilder().setMajorNumber(major).setMinorNumber(minor).build();
      return this;
    }

    /**
     * {@code ads_config.set_node_on_first_message_only}, true by default (as istio's bootstrap sets
     * it); SotW only.
     */
    public Builder nodeOnFirstMessageOnly(boolean firstOnly) {
      this.nodeOnFirstMessageOnly = firstOnly;
      return this;
    }

    /** Envoy before 1.28: a new SotW stream re-sends the previous stream's nonces (envoy#30155). */
    public Builder keepNoncesAcrossStreams() {
      this.keepNoncesAcrossStreams = true;
      return this;
    }

    /**
     * {@code envoy.restart_features.use_eds_cache_for_ads} on, as it is by default from Envoy 1.32:
     * a cluster whose initial fetch times out uses the last assignment of its EDS name, if a watch
     * still holds one.
     */
    public Builder edsCacheForAds() {
      this.edsCacheForAds = true;
      return this;
    }

    /**
     * {@code eds_config.initial_fetch_timeout} of every EDS cluster: after it a warming cluster
     * completes without hosts. Zero, the model's default, disables it, as istiod's generated config
     * does; Envoy's own default when the field is unset is 15 s ({@code
     * Config::Utility::configSourceInitialFetchTimeout}).
     */
    public Builder initialFetchTimeout(Duration timeout) {
      this.initialFetchTimeout = timeout;
      return this;
    }

    /**
     * Opens a new stream this long after the server ends one (Envoy backs off and retries); without
     * it a test calls {@link #reconnect()}.
     */
    public Builder reconnectAfter(Duration delay) {
      this.reconnectAfter = delay;
      return this;
    }

    /**
     * A cluster of {@code static_resources}; an EDS one gets its endpoints over ADS before CDS is
     * even requested ({@code ClusterManagerInitHelper}), so EDS leads the subscription order.
     */
    public Builder bootstrapCluster(Cluster cluster) {
      bootstrapClusters.add(cluster);
      return this;
    }

    /**
     * Opens the ADS stream to {@code target} (host:port, plaintext) and starts as Envoy's server
     * does.
     */
    public EnvoyLikeClient start(String target) {
      EnvoyLikeClient client = new EnvoyLikeClient(this);
      client.onMain(() -> client.begin(target));
      return client;
    }

    private Node node() {
      return Node.newBuilder()
          .setId(nodeId)
          .setCluster(nodeCluster)
          .setMetadata(metadata)
          .setUserAgentName("envoy")
          .setUserAgentBuildVersion(BuildVersion.newBuilder().setVersion(envoyVersion))
          .addAllClientFeatures(clientFeatures)
          .build();
    }
  }

  /** What the query methods read: rebuilt on the main thread after each step. */
  private record View(
      Map<String, Cluster> active,
      Map<String, Cluster> warming,
      Map<String, ClusterLoadAssignment> assignments,
      Map<String, Listener> listeners,
      Map<String, RouteConfiguration> routes,
      boolean streamOpen) {}

  private final Mode mode;
  private final Node node;
  private final Duration reconnectAfter;
  private final ScheduledExecutorService main;
  private final Instant startedAt = Instant.now();
  private volatile Thread mainThread;

  // Confined to the main thread.
  private final EnvoyMux mux;
  private final EnvoyClusterManager clusterManager;
  private final EnvoyListenerManager listenerManager;
  private final List<ManagedChannel> channels = new ArrayList<>();
  private ManagedChannel channel;
  private ClientCallStreamObserver<?> requestStream;
  private long streamGeneration;

  // Read from any thread.
  private volatile View view = new View(Map.of(), Map.of(), Map.of(), Map.of(), Map.of(), false);

  /**
   * Requests the current step sent, written once it has published the view ({@link
   * #publishAndWrite}). Main thread.
   */
  private final List<Runnable> outbox = new ArrayList<>();

  private volatile Instant initializedAt;
  private final List<String> transcript = new CopyOnWriteArrayList<>();
  private final List<DiscoveryRequest> sotwRequests = new CopyOnWriteArrayList<>();
  private final List<DeltaDiscoveryRequest> deltaRequests = new CopyOnWriteArrayList<>();
  private final List<ClusterWarming> warmings = new CopyOnWriteArrayList<>();
  private final Map<String, AtomicLong> requestsSent = new ConcurrentHashMap<>();
  private final Map<String, AtomicLong> responsesReceived = new ConcurrentHashMap<>();
  private final AtomicLong nacksSent = new AtomicLong();
  private final List<Throwable> modelErrors = new CopyOnWriteArrayList<>();

  private EnvoyLikeClient(Builder builder) {
    this.mode = builder.mode;
    this.node = builder.node();
    this.reconnectAfter = builder.reconnectAfter;
    this.main =
        Executors.newSingleThreadScheduledExecutor(
            task -> {
              Thread thread = new Thread(task, "envoy-like-main " + builder.nodeId);
              thread.setDaemon(true);
              mainThread = thread;
              return thread;
            });
    EnvoySotwMux.EdsCache edsCache = builder.edsCacheForAds ? new EnvoySotwMux.EdsCache() : null;
    this.mux =
        mode == Mode.SOTW
            ? new EnvoySotwMux(
                node,
                builder.nodeOnFirstMessageOnly,
                builder.keepNoncesAcrossStreams,
                edsCache,
                this::note)
            : new EnvoyDeltaMux(node, edsCache, this::note);
    this.clusterManager =
        new EnvoyClusterManager(
            mux,
            List.copyOf(builder.bootstrapClusters),
            builder.initialFetchTimeout,
            edsCache,
            this::schedule,
            Instant::now,
            this::note,
            warmings::add,
            this::onAllClustersInitialized);
    this.listenerManager = new EnvoyListenerManager(mux, this::note);
  }

  // Control

  /**
   * Ends the current stream and opens a new one to the same control plane, as after a dropped
   * connection.
   */
  public void reconnect() {
    onMain(
        () -> {
          endStream("reconnect");
          openStream();
        });
  }

  /**
   * Ends the current stream and opens one to {@code target}: another replica, or a restarted
   * control plane.
   */
  public void reconnect(String target) {
    onMain(
        () -> {
          endStream("reconnect to " + target);
          channel = newChannel(target);
          openStream();
        });
  }

  @Override
  public void close() {
    onMain(() -> endStream("closed"));
    main.shutdown();
    try {
      main.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    main.shutdownNow();
    channels.forEach(ManagedChannel::shutdownNow);
  }

  // Queries: thread-safe.

  public Mode mode() {
    return mode;
  }

  public Node node() {
    return node;
  }

  /**
   * Clusters in use, by name; a changed cluster still shows its previous version here while the new
   * one warms.
   */
  public Map<String, Cluster> activeClusters() {
    return view.active();
  }

  /**
   * Names of clusters warming now: added or changed, waiting for an assignment of their EDS name.
   */
  public Set<String> warmingClusters() {
    return view.warming().keySet();
  }

  public boolean isWarming(String cluster) {
    return view.warming().containsKey(cluster);
  }

  /** Whether {@code cluster} is active and no newer version of it is warming. */
  public boolean isWarm(String cluster) {
    View now = view;
    return now.active().containsKey(cluster) && !now.warming().containsKey(cluster);
  }

  /**
   * The assignment the active {@code cluster} uses; empty if it has none (it warmed without hosts).
   */
  public Optional<ClusterLoadAssignment> assignment(String cluster) {
    return Optional.ofNullable(view.assignments().get(cluster));
  }

  /** The active {@code cluster}'s hosts as address:port. */
  public List<String> hosts(String cluster) {
    return assignment(cluster).stream()
        .flatMap(assignment -> assignment.getEndpointsList().stream())
        .flatMap(locality -> locality.getLbEndpointsList().stream())
        .map(endpoint -> endpoint.getEndpoint().getAddress().getSocketAddress())
        .map(address -> address.getAddress() + ":" + address.getPortValue())
        .toList();
  }

  public Map<String, Listener> listeners() {
    return view.listeners();
  }

  public Map<String, RouteConfiguration> routes() {
    return view.routes();
  }

  /**
   * Whether every initial cluster is initialized, so LDS has been requested (Envoy's server init).
   */
  public boolean initialized() {
    return initializedAt != null;
  }

  /** When LDS was first requested; empty before. */
  public Optional<Instant> initializedAt() {
    return Optional.ofNullable(initializedAt);
  }

  public boolean streamOpen() {
    return view.streamOpen();
  }

  /** Every warming completed so far, in order. */
  public List<ClusterWarming> warmings() {
    return List.copyOf(warmings);
  }

  /** The warmings of {@code cluster}, in order. */
  public List<ClusterWarming> warmings(String cluster) {
    return warmings.stream().filter(warming -> warming.cluster().equals(cluster)).toList();
  }

  /**
   * Whether a version of {@code cluster} applied since {@code since} has warmed because an
   * assignment for it arrived.
   */
  public boolean warmedByAssignmentSince(Instant since, String cluster) {
    return warmedSince(since, cluster, WarmCause.ASSIGNMENT);
  }

  /**
   * Whether a version of {@code cluster} applied since {@code since} has warmed because its initial
   * fetch timed out.
   */
  public boolean warmedByTimeoutSince(Instant since, String cluster) {
    return warmedSince(since, cluster, WarmCause.INITIAL_FETCH_TIMEOUT);
  }

  /**
   * Whether a version of {@code cluster} applied since {@code since} (its warming began then or
   * later) has warmed for {@code cause}.
   */
  public boolean warmedSince(Instant since, String cluster, WarmCause cause) {
    return warmings.stream()
        .anyMatch(
            warming ->
                warming.cluster().equals(cluster)
                    && warming.cause() == cause
                    && !warming.startedAt().isBefore(since));
  }

  /** Every SotW request sent, on every stream, in order. */
  public List<DiscoveryRequest> sotwRequests() {
    return List.copyOf(sotwRequests);
  }

  /** Every Delta request sent, on every stream, in order. */
  public List<DeltaDiscoveryRequest> deltaRequests() {
    return List.copyOf(deltaRequests);
  }

  public long requestsSent(TypeUrl type) {
    return requestsSent.getOrDefault(type.url(), new AtomicLong()).get();
  }

  public long responsesReceived(TypeUrl type) {
    return responsesReceived.getOrDefault(type.url(), new AtomicLong()).get();
  }

  /** Requests sent with an error_detail. */
  public long nacksSent() {
    return nacksSent.get();
  }

  /**
   * Failures of the model itself (a bug here, not in the peer): a test can assert there are none.
   */
  public List<Throwable> modelErrors() {
    return List.copyOf(modelErrors);
  }

  /**
   * Every message exchanged and every step of the model, one line each, for a failing assertion's
   * message.
   */
  public String transcript() {
    return String.join("\n", transcript);
  }

  public List<String> transcriptLines() {
    return List.copyOf(transcript);
  }

  // The main thread.

  private void onMain(Runnable task) {
    try {
      main.execute(() -> runOnMain(task));
    } catch (RejectedExecutionException closed) {
      // The client is closed: nothing runs any more.
    }
  }

  private void runOnMain(Runnable task) {
    try {
      task.run();
    } catch (RuntimeException | Error e) {
      modelErrors.add(e);
      note("! model error: " + e);
    } finally {
      publishAndWrite();
    }
  }

  /**
   * Publishes the view, then writes the requests the step sent, in order: a server that has seen a
   * request finds what the client did before sending it already visible to a test's queries.
   */
  private void publishAndWrite() {
    publish();
    List<Runnable> writes = List.copyOf(outbox);
    outbox.clear();
    for (Runnable write : writes) {
      try {
        write.run();
      } catch (RuntimeException e) {
        modelErrors.add(e);
        note("! model error: " + e);
      }
    }
  }

  private void checkOnMain() {
    if (Thread.currentThread() != mainThread) {
      throw new IllegalStateException(
          "EnvoyLikeClient state used off its main thread: " + Thread.currentThread().getName());
    }
  }

  private Runnable schedule(Duration delay, Runnable task) {
    ScheduledFuture<?> future =
        main.schedule(() -> runOnMain(task), delay.toNanos(), TimeUnit.NANOSECONDS);
    return () -> future.cancel(false);
  }

  private void publish() {
    view =
        new View(
            Map.copyOf(clusterManager.activeClusters()),
            Map.copyOf(clusterManager.warmingClusters()),
            Map.copyOf(clusterManager.activeAssignments()),
            listenerManager.listeners(),
            listenerManager.routes(),
            requestStream != null);
  }

  private void begin(String target) {
    note(
        "start: node "
            + node.getId()
            + " (cluster "
            + node.getCluster()
            + "), "
            + mode
            + " ADS to "
            + target);
    channel = newChannel(target);
    // GrpcMuxImpl::start runs at the end of the ClusterManagerImpl constructor: the stream exists
    // before any watch.
    openStream();
    clusterManager.start();
  }

  /**
   * {@code RunHelper}'s cluster manager initialized callback: the init manager starts, and with it
   * LDS.
   */
  private void onAllClustersInitialized() {
    initializedAt = Instant.now();
    note("all clusters initialized. initializing init manager (LDS)");
    listenerManager.start();
  }

  private ManagedChannel newChannel(String target) {
    ManagedChannel created =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create()).build();
    channels.add(created);
    return created;
  }

  private void openStream() {
    long generation = ++streamGeneration;
    var stub = AggregatedDiscoveryServiceGrpc.newStub(channel);
    Consumer<Message> sender;
    if (mode == Mode.SOTW) {
      var requests =
          (ClientCallStreamObserver<DiscoveryRequest>)
              stub.streamAggregatedResources(responses(generation));
      requestStream = requests;
      sender = message -> send(requests, (DiscoveryRequest) message);
    } else {
      var requests =
          (ClientCallStreamObserver<DeltaDiscoveryRequest>)
              stub.deltaAggregatedResources(responses(generation));
      requestStream = requests;
      sender = message -> send(requests, (DeltaDiscoveryRequest) message);
    }
    note("stream " + generation + " opened");
    mux.onStreamEstablished(sender);
  }

  private void endStream(String why) {
    publishAndWrite();
    if (requestStream != null) {
      requestStream.cancel(why, null);
      requestStream = null;
      mux.onStreamClosed();
      note("stream " + streamGeneration + " ended: " + why);
    }
  }

  private <T extends Message> StreamObserver<T> responses(long generation) {
    return new StreamObserver<>() {
      @Override
      public void onNext(T response) {
        onMain(
            () -> {
              if (generation == streamGeneration && requestStream != null) {
                receive(response);
              }
            });
      }

      @Override
      public void onError(Throwable t) {
        onMain(() -> streamEnded(generation, Status.fromThrowable(t)));
      }

      @Override
      public void onCompleted() {
        onMain(() -> streamEnded(generation, Status.OK));
      }
    };
  }

  /**
   * The server ended the stream: requests are dropped until a new one ({@code
   * GrpcStream::onRemoteClose}).
   */
  private void streamEnded(long generation, Status status) {
    if (generation != streamGeneration || requestStream == null) {
      return;
    }
    requestStream = null;
    mux.onStreamClosed();
    note(
        "stream "
            + generation
            + " ended by the server: "
            + status.getCode()
            + (status.getDescription() == null ? "" : " " + status.getDescription()));
    if (reconnectAfter != null) {
      schedule(
          reconnectAfter,
          () -> {
            if (requestStream == null && generation == streamGeneration) {
              openStream();
            }
          });
    }
  }

  private void receive(Message response) {
    if (response instanceof DiscoveryResponse sotw) {
      responsesReceived.computeIfAbsent(sotw.getTypeUrl(), t -> new AtomicLong()).incrementAndGet();
      note(
          "← "
              + EnvoyMux.shortType(sotw.getTypeUrl())
              + " v=\""
              + sotw.getVersionInfo()
              + "\" nonce=\""
              + sotw.getNonce()
              + "\" "
              + sotw.getResourcesList().stream().map(EnvoyLikeClient::nameOf).toList());
    } else if (response instanceof DeltaDiscoveryResponse delta) {
      responsesReceived
          .computeIfAbsent(delta.getTypeUrl(), t -> new AtomicLong())
          .incrementAndGet();
      note(
          "← Δ "
              + EnvoyMux.shortType(delta.getTypeUrl())
              + " v=\""
              + delta.getSystemVersionInfo()
              + "\" nonce=\""
              + delta.getNonce()
              + "\" +"
              + delta.getResourcesList().stream()
                  .map(resource -> resource.getName() + "@" + resource.getVersion())
                  .toList()
              + " -"
              + delta.getRemovedResourcesList());
    }
    mux.onResponse(response);
  }

  private void send(ClientCallStreamObserver<DiscoveryRequest> stream, DiscoveryRequest request) {
    checkOnMain();
    sotwRequests.add(request);
    count(request.getTypeUrl(), request.hasErrorDetail());
    note(
        "→ "
            + EnvoyMux.shortType(request.getTypeUrl())
            + (request.hasErrorDetail() ? " NACK" : "")
            + " v=\""
            + request.getVersionInfo()
            + "\" nonce=\""
            + request.getResponseNonce()
            + "\" "
            + request.getResourceNamesList()
            + (request.hasNode() ? " node" : "")
            + (request.hasErrorDetail() ? " (" + request.getErrorDetail().getMessage() + ")" : ""));
    outbox.add(() -> stream.onNext(request));
  }

  private void send(
      ClientCallStreamObserver<DeltaDiscoveryRequest> stream, DeltaDiscoveryRequest request) {
    checkOnMain();
    deltaRequests.add(request);
    count(request.getTypeUrl(), request.hasErrorDetail());
    note(
        "→ Δ "
            + EnvoyMux.shortType(request.getTypeUrl())
            + (request.hasErrorDetail() ? " NACK" : "")
            + " +"
            + request.getResourceNamesSubscribeList()
            + " -"
            + request.getResourceNamesUnsubscribeList()
            + (request.getInitialResourceVersionsCount() == 0
                ? ""
                : " initial" + new TreeMap<>(request.getInitialResourceVersionsMap()))
            + " nonce=\""
            + request.getResponseNonce()
            + "\""
            + (request.hasNode() ? " node" : "")
            + (request.hasErrorDetail() ? " (" + request.getErrorDetail().getMessage() + ")" : ""));
    outbox.add(() -> stream.onNext(request));
  }

  private void count(String typeUrl, boolean nack) {
    requestsSent.computeIfAbsent(typeUrl, t -> new AtomicLong()).incrementAndGet();
    if (nack) {
      nacksSent.incrementAndGet();
    }
  }

  private void note(String line) {
    transcript.add("+" + Duration.between(startedAt, Instant.now()).toMillis() + "ms " + line);
  }

  private static String nameOf(Any any) {
    if (any.is(Resource.class)) {
      try {
        return any.unpack(Resource.class).getName();
      } catch (InvalidProtocolBufferException e) {
        return "?";
      }
    }
    return ResourceDecoder.nameOf(any.getValue());
  }

  @Override
  public String toString() {
    return "EnvoyLikeClient("
        + mode
        + ", "
        + node.getId()
        + ", warming "
        + warmingClusters()
        + ", "
        + warmings.stream().map(ClusterWarming::toString).collect(Collectors.joining("; "))
        + ")";
  }
}
