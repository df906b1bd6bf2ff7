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
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * An executable model of go-control-plane (github.com/envoyproxy/go-control-plane) as the proxy's
 * upstream: a real ADS server on loopback, SotW and Delta, whose request handling follows go's
 * source rule by rule — each class cites the file and function it follows, so it can be read
 * against the original. Node groups are {@code node.cluster} (go's {@code NodeHash} returning the
 * cluster).
 *
 * <p>Three flavours, each the server of {@code pkg/server/v3} ({@code NewServer}, SotW unordered —
 * no {@code WithOrderedADS} — and legacy wildcard active) over a different cache:
 *
 * <ul>
 *   <li>{@link Flavour#SNAPSHOT}: HEAD (2b88c16) over {@code NewSnapshotCache(true, …)}, snapshots
 *       made with {@code NewSnapshot(version, resources)} — {@link GoSotwStream}, {@link
 *       GoDeltaStream}, {@link GoSnapshotCache}.
 *   <li>{@link Flavour#SNAPSHOT_V0_13_4}: the same at tag v0.13.4, before subscriptions, where the
 *       SotW cache's rule for re-subscribed names is go-control-plane#583 — {@link
 *       GoSotwStreamV013}, {@link GoDeltaStreamV013}, {@link GoSnapshotCacheV013}.
 *   <li>{@link Flavour#LINEAR}: HEAD with one {@code LinearCache} per node group and type behind a
 *       {@code MuxCache}, per-resource versions under {@link GoLinearCaches#VERSION_PREFIX} —
 *       {@link GoSotwStream}, {@link GoDeltaStream}, {@link GoLinearCaches}.
 * </ul>
 *
 * <p>Each stream's state is confined to its own serializing context ({@link GoStreamLink}); the
 * caches lock as go's do. {@link #setDoNotCache} is a test extension go does not have.
 */
public final class GoControlPlaneModel implements UpstreamControlPlane {

  /** Which go-control-plane, and over which cache. */
  public enum Flavour {
    SNAPSHOT("go-control-plane (SnapshotCache)"),
    SNAPSHOT_V0_13_4("go-control-plane v0.13.4 (SnapshotCache)"),
    LINEAR("go-control-plane (LinearCache)");

    private final String displayName;

    Flavour(String displayName) {
      this.displayName = displayName;
    }
  }

  /** What differs between flavours: the stream handlers and where a snapshot goes. */
  private record Backend(
      Function<GoStreamLink<DiscoveryResponse>, GoStreamLink.Handler<DiscoveryRequest>> sotw,
      Function<GoStreamLink<DeltaDiscoveryResponse>, GoStreamLink.Handler<DeltaDiscoveryRequest>>
          delta,
      BiConsumer<String, GoSnapshot> snapshots) {}

  /** Who opened a stream, and whether it is still open. */
  private static final class StreamRecord {
    private volatile Node node;
    private volatile boolean open = true;
    private volatile Runnable close = () -> {};
  }

  private final String name;
  private final Backend backend;
  private final ExecutorService drainer =
      Executors.newCachedThreadPool(
          runnable -> {
            Thread thread = new Thread(runnable, "go-control-plane-model");
            thread.setDaemon(true);
            return thread;
          });
  private final AtomicLong streamIds = new AtomicLong();
  private final Map<Long, StreamRecord> streams = new ConcurrentSkipListMap<>();
  private final List<DiscoveryRequest> requests = new CopyOnWriteArrayList<>();
  private final List<DeltaDiscoveryRequest> deltaRequests = new CopyOnWriteArrayList<>();
  private final AtomicLong responses = new AtomicLong();
  private volatile Set<String> doNotCache = Set.of();
  private int port;
  private Server server;

  /** A model of {@code flavour}, already serving on a loopback port. */
  public GoControlPlaneModel(Flavour flavour) throws IOException {
    this(flavour.displayName, backend(flavour));
  }

  private GoControlPlaneModel(String name, Backend backend) throws IOException {
    this.name = name;
    this.backend = backend;
    start();
  }

  /**
   * HEAD's server over any cache, as go's {@code server.NewServer} takes any {@code ConfigWatcher}:
   * for tests that need a cache misbehaving the way go's own server tests make one. It takes no
   * snapshots.
   */
  static GoControlPlaneModel headServerOver(String name, GoCache cache) throws IOException {
    return new GoControlPlaneModel(
        name,
        new Backend(
            link -> new GoSotwStream(cache, link),
            link -> new GoDeltaStream(cache, link),
            (group, snapshot) -> {
              throw new UnsupportedOperationException(name + " takes no snapshots");
            }));
  }

  private static Backend backend(Flavour flavour) {
    return switch (flavour) {
      case SNAPSHOT -> {
        GoSnapshotCache cache = new GoSnapshotCache();
        yield new Backend(
            link -> new GoSotwStream(cache, link),
            link -> new GoDeltaStream(cache, link),
            cache::setSnapshot);
      }
      case SNAPSHOT_V0_13_4 -> {
        GoSnapshotCacheV013 cache = new GoSnapshotCacheV013();
        yield new Backend(
            link -> new GoSotwStreamV013(cache, link),
            link -> new GoDeltaStreamV013(cache, link),
            cache::setSnapshot);
      }
      case LINEAR -> {
        GoLinearCaches caches = new GoLinearCaches();
        yield new Backend(
            link -> new GoSotwStream(caches, link),
            link -> new GoDeltaStream(caches, link),
            caches::update);
      }
    };
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String target() {
    return "127.0.0.1:" + port;
  }

  /**
   * SnapshotCache flavours: {@code SetSnapshot(group, NewSnapshot(snapshot's version, its
   * resources))}. LinearCache: each type's cache gets an {@code UpdateResources} with what differs;
   * the snapshot's version is not used, LinearCache keeps its own.
   */
  @Override
  public void setSnapshot(String group, Snapshot snapshot) {
    backend.snapshots().accept(group, GoSnapshot.from(snapshot, doNotCache));
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
                    .addService(new Service())
                    .build());
    port = server.getPort();
  }

  /**
   * Stops serving and cuts every open stream (its watches cancelled), as a crashed go server would.
   */
  @Override
  public synchronized void stop() throws InterruptedException {
    server.shutdownNow();
    server.awaitTermination(10, TimeUnit.SECONDS);
    streams.values().forEach(stream -> stream.close.run());
  }

  @Override
  public List<String> streamGroups() {
    return streams.values().stream()
        .map(stream -> stream.node)
        .filter(Objects::nonNull)
        .map(Node::getCluster)
        .toList();
  }

  @Override
  public List<String> streamNodeIds() {
    return streams.values().stream()
        .map(stream -> stream.node)
        .filter(Objects::nonNull)
        .map(Node::getId)
        .toList();
  }

  @Override
  public List<String> openStreamNodeIds() {
    return streams.values().stream()
        .filter(stream -> stream.open)
        .map(stream -> stream.node)
        .filter(Objects::nonNull)
        .map(Node::getId)
        .toList();
  }

  @Override
  public long openStreams() {
    return streams.values().stream().filter(stream -> stream.open && stream.node != null).count();
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
  public synchronized void close() {
    server.shutdownNow();
    streams.values().forEach(stream -> stream.close.run());
    drainer.shutdown();
  }

  /**
   * Binds one gRPC stream to its handler: every request is recorded, then handed to the handler in
   * the stream's context; the stream's end, whichever side ends it, closes the handler once.
   */
  private <Q, R> StreamObserver<Q> open(
      StreamObserver<R> responses,
      Function<GoStreamLink<R>, GoStreamLink.Handler<Q>> factory,
      List<Q> recorded,
      Function<Q, Node> nodeOf) {
    long id = streamIds.incrementAndGet();
    ServerCallStreamObserver<R> out = (ServerCallStreamObserver<R>) responses;
    GoStreamLink<R> link = new GoStreamLink<>(id, out, drainer, this.responses::incrementAndGet);
    GoStreamLink.Handler<Q> handler = factory.apply(link);
    link.attach(handler);
    StreamRecord record = new StreamRecord();
    record.close =
        () -> {
          record.open = false;
          link.run(handler::close);
        };
    streams.put(id, record);
    out.setOnCancelHandler(record.close);
    return new StreamObserver<>() {
      @Override
      public void onNext(Q request) {
        recorded.add(request);
        Node node = nodeOf.apply(request);
        if (record.node == null && node != null) {
          record.node = node;
        }
        link.run(() -> handler.onRequest(request));
      }

      @Override
      public void onError(Throwable error) {
        record.close.run();
      }

      @Override
      public void onCompleted() {
        record.open = false;
        link.run(
            () -> {
              handler.close();
              link.complete();
            });
      }
    };
  }

  private final class Service extends AggregatedDiscoveryServiceImplBase {

    @Override
    public StreamObserver<DiscoveryRequest> streamAggregatedResources(
        StreamObserver<DiscoveryResponse> responses) {
      return open(
          responses,
          backend.sotw(),
          requests,
          request -> request.hasNode() ? request.getNode() : null);
    }

    @Override
    public StreamObserver<DeltaDiscoveryRequest> deltaAggregatedResources(
        StreamObserver<DeltaDiscoveryResponse> responses) {
      return open(
          responses,
          backend.delta(),
          deltaRequests,
          request -> request.hasNode() ? request.getNode() : null);
    }
  }
}
