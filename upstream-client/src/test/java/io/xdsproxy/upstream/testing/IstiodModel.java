package io.xdsproxy.upstream.testing;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc.AggregatedDiscoveryServiceImplBase;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.upstream.testing.IstiodConfig.ConfigChange;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An executable model of istiod as the proxy's upstream: a gRPC ADS server on loopback, SotW and
 * Delta, whose answering rules follow istio/istio at 86c9f01 (2026-08-22), each citing the file and
 * function it follows. The rules are in {@link IstiodSotwConnection} (pkg/xds/server.go {@code
 * ShouldRespond}, xdsgen.go {@code pushXds}), {@link IstiodDeltaConnection}
 * (pilot/pkg/xds/delta.go) and {@link IstiodConfig} (the generators, and which push sends which
 * type); this class is istiod's {@code DiscoveryServer}: it keeps each node group's configuration,
 * makes push versions, and pushes a configuration change to every connection.
 *
 * <p>A node group ({@code node.cluster}) stands for proxies istiod would generate identical
 * configuration for; {@link #setSnapshot} is a config change of that group. What the model leaves
 * out: istiod's readiness and rate limits, authentication, the "type~ip~id~domain" node id, health
 * probes, debug types, proxyless gRPC (which is sent every watched name), gateways (which get
 * nothing for an unknown route name), and every type beyond the five of a snapshot.
 */
public final class IstiodModel implements UpstreamControlPlane {

  /** A stream that sent its node: what the recording accessors report. */
  private record StreamRecord(long id, String group, String nodeId) {}

  /**
   * {@code proxy.LastPushContext} of a connection that just sent its node, and its group's
   * configuration.
   */
  record Connected(String pushVersion, IstiodConfig config) {}

  /**
   * One configuration change of one group under a new push version: what discovery.go {@code Push}
   * sends to every connection.
   */
  record PushEvent(String group, String pushVersion, IstiodConfig config, ConfigChange change) {}

  private final Clock clock;
  private final AtomicLong streamIds = new AtomicLong();
  private final List<StreamRecord> streams = new CopyOnWriteArrayList<>();
  private final Set<Long> closedStreams = ConcurrentHashMap.newKeySet();
  private final List<DiscoveryRequest> requests = new CopyOnWriteArrayList<>();
  private final List<DeltaDiscoveryRequest> deltaRequests = new CopyOnWriteArrayList<>();
  private final AtomicLong responses = new AtomicLong();
  private volatile Set<String> doNotCache = Set.of();

  // The push context, the groups' configurations and the connected streams change together under
  // this lock, so that a connecting stream either sees a push's configuration or receives the push.
  private final Map<String, IstiodConfig> configs = new HashMap<>();
  private final Set<IstiodConnection<?, ?>> connections = new LinkedHashSet<>();
  private long pushVersionNumber;
  private String pushVersion;

  private int port;
  private Server server;

  public IstiodModel() throws IOException {
    this(Clock.systemUTC());
  }

  /** A model whose push versions read time from {@code clock}. */
  public IstiodModel(Clock clock) throws IOException {
    this.clock = clock;
    // The push context istiod starts serving with.
    synchronized (this) {
      pushVersion = nextVersion();
    }
    start();
  }

  @Override
  public String name() {
    return "istiod";
  }

  @Override
  public String target() {
    return "127.0.0.1:" + port;
  }

  /**
   * A config change for {@code group}: if anything in it differs from the group's previous
   * configuration (an identical one is no change, and istiod would not push), a new push version
   * (discovery.go {@code Push}, {@code NextVersion}) and a push to every open stream, which the
   * stream's own group's streams act on (see {@link IstiodConfig.ConfigChange} for what each change
   * sends).
   */
  @Override
  public void setSnapshot(String group, Snapshot snapshot) {
    List<IstiodConnection<?, ?>> reached;
    synchronized (this) {
      IstiodConfig config = IstiodConfig.of(snapshot, doNotCache);
      ConfigChange change =
          IstiodConfig.changeBetween(configs.getOrDefault(group, IstiodConfig.EMPTY), config);
      configs.put(group, config);
      if (change.isEmpty()) {
        return;
      }
      pushVersion = nextVersion();
      PushEvent event = new PushEvent(group, pushVersion, config, change);
      reached = new ArrayList<>(connections);
      reached.forEach(
          connection -> connection.context.executeLater(() -> connection.onPush(event)));
    }
    // Runs the pushes here unless a gRPC thread is already running that stream's work.
    reached.forEach(connection -> connection.context.drain());
  }

  @Override
  public void setDoNotCache(Set<String> names) {
    doNotCache = Set.copyOf(names);
  }

  @Override
  public synchronized void start() throws IOException {
    server =
        SamePort.start(
            () ->
                NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
                    .addService(
                        new AggregatedDiscoveryServiceImplBase() {
                          @Override
                          public StreamObserver<DiscoveryRequest> streamAggregatedResources(
                              StreamObserver<DiscoveryResponse> responses) {
                            return new IstiodSotwConnection(
                                    IstiodModel.this, streamIds.incrementAndGet(), responses)
                                .requests();
                          }

                          @Override
                          public StreamObserver<DeltaDiscoveryRequest> deltaAggregatedResources(
                              StreamObserver<DeltaDiscoveryResponse> responses) {
                            return new IstiodDeltaConnection(
                                    IstiodModel.this, streamIds.incrementAndGet(), responses)
                                .requests();
                          }
                        })
                    .build());
    port = server.getPort();
  }

  @Override
  public void stop() throws InterruptedException {
    Server stopping;
    synchronized (this) {
      stopping = server;
    }
    stopping.shutdownNow();
    stopping.awaitTermination();
  }

  @Override
  public List<String> streamGroups() {
    return streams.stream().map(StreamRecord::group).toList();
  }

  @Override
  public List<String> streamNodeIds() {
    return streams.stream().map(StreamRecord::nodeId).toList();
  }

  @Override
  public List<String> openStreamNodeIds() {
    return streams.stream()
        .filter(stream -> !closedStreams.contains(stream.id()))
        .map(StreamRecord::nodeId)
        .toList();
  }

  @Override
  public long openStreams() {
    return streams.stream().filter(stream -> !closedStreams.contains(stream.id())).count();
  }

  @Override
  public List<DiscoveryRequest> requests() {
    return List.copyOf(requests);
  }

  @Override
  public List<DeltaDiscoveryRequest> deltaRequests() {
    return List.copyOf(deltaRequests);
  }

  @Override
  public long responsesSent() {
    return responses.get();
  }

  @Override
  public void close() {
    Server closing;
    synchronized (this) {
      closing = server;
    }
    closing.shutdownNow();
  }

  /**
   * ads.go {@code initConnection}: registers the stream for pushes, with the push context of now.
   */
  synchronized Connected connect(IstiodConnection<?, ?> connection, Node node) {
    connections.add(connection);
    streams.add(new StreamRecord(connection.streamId, node.getCluster(), node.getId()));
    return new Connected(pushVersion, configs.getOrDefault(node.getCluster(), IstiodConfig.EMPTY));
  }

  synchronized void disconnect(IstiodConnection<?, ?> connection) {
    if (connections.remove(connection)) {
      closedStreams.add(connection.streamId);
    }
  }

  void recordRequest(Object request) {
    if (request instanceof DiscoveryRequest sotw) {
      requests.add(sotw);
    } else if (request instanceof DeltaDiscoveryRequest delta) {
      deltaRequests.add(delta);
    }
  }

  void responseSent() {
    responses.incrementAndGet();
  }

  /**
   * discovery.go {@code nonce}: the push version followed by a UUID, so a nonce names its version.
   */
  String nonce(String version) {
    return version + UUID.randomUUID();
  }

  /** discovery.go {@code NextVersion}: the time (RFC 3339) and a counter. */
  private String nextVersion() {
    String now =
        OffsetDateTime.now(clock)
            .truncatedTo(ChronoUnit.SECONDS)
            .format(DateTimeFormatter.ISO_OFFSET_DATE_TIME);
    return now + "/" + ++pushVersionNumber;
  }
}
