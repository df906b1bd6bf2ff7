package io.xdsproxy.upstream.testing;

import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.controlplane.server.DiscoveryServerCallbacks;
import io.envoyproxy.controlplane.server.V3DiscoveryServer;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A real upstream: java-control-plane's V3DiscoveryServer over a SimpleCache keyed by node.cluster,
 * on a loopback port. Records which node group opened each ADS stream and every request. It can be
 * stopped and started again on the same port, with the same snapshots, like a restarted control
 * plane.
 */
public final class ControlPlane implements UpstreamControlPlane {

  private final SimpleCache<String> cache = new SimpleCache<>(node -> node.getCluster());
  private final Map<Long, String> streamGroups = new ConcurrentHashMap<>();
  private final Map<Long, String> streamNodeIds = new ConcurrentHashMap<>();
  private final Set<Long> closedStreams = ConcurrentHashMap.newKeySet();
  private final List<DiscoveryRequest> requests = new CopyOnWriteArrayList<>();
  private final List<DeltaDiscoveryRequest> deltaRequests = new CopyOnWriteArrayList<>();
  private final AtomicLong responses = new AtomicLong();
  private final V3DiscoveryServer discovery;
  private final ServerCredentials credentials;
  private final List<ServerInterceptor> interceptors;
  private int port;
  private Server server;

  public ControlPlane() throws IOException {
    this(InsecureServerCredentials.create());
  }

  /**
   * A control plane served with {@code credentials} (TLS, maybe asking for client certificates),
   * each call seen first by {@code interceptors}: one that authenticates its clients, as istiod's
   * secure port does.
   */
  public ControlPlane(ServerCredentials credentials, ServerInterceptor... interceptors)
      throws IOException {
    this.credentials = credentials;
    this.interceptors = List.of(interceptors);
    DiscoveryServerCallbacks callbacks =
        new DiscoveryServerCallbacks() {
          @Override
          public void onV3StreamRequest(long streamId, DiscoveryRequest request) {
            requests.add(request);
            if (request.hasNode()) {
              streamGroups.putIfAbsent(streamId, request.getNode().getCluster());
              streamNodeIds.putIfAbsent(streamId, request.getNode().getId());
            }
          }

          @Override
          public void onV3StreamResponse(
              long streamId, DiscoveryRequest request, DiscoveryResponse response) {
            responses.incrementAndGet();
          }

          @Override
          public void onV3StreamDeltaResponse(
              long streamId, DeltaDiscoveryRequest request, DeltaDiscoveryResponse response) {
            responses.incrementAndGet();
          }

          @Override
          public void onStreamClose(long streamId, String typeUrl) {
            closedStreams.add(streamId);
          }

          @Override
          public void onStreamCloseWithError(long streamId, String typeUrl, Throwable error) {
            closedStreams.add(streamId);
          }

          @Override
          public void onV3StreamDeltaRequest(long streamId, DeltaDiscoveryRequest request) {
            deltaRequests.add(request);
            if (request.hasNode()) {
              streamGroups.putIfAbsent(streamId, request.getNode().getCluster());
              streamNodeIds.putIfAbsent(streamId, request.getNode().getId());
            }
          }
        };
    discovery = new V3DiscoveryServer(callbacks, cache);
    start();
  }

  /** Starts serving, on the port of the previous start if there was one. */
  public void start() throws IOException {
    server =
        SamePort.start(
            () ->
                NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port), credentials)
                    .addService(
                        ServerInterceptors.intercept(
                            discovery.getAggregatedDiscoveryServiceImpl(), interceptors))
                    .build());
    port = server.getPort();
  }

  /** Stops serving and cuts every open stream, as a crashed control plane would. */
  public void stop() throws InterruptedException {
    server.shutdownNow();
    server.awaitTermination();
  }

  @Override
  public String name() {
    return "java-control-plane";
  }

  @Override
  public String target() {
    return "127.0.0.1:" + port;
  }

  @Override
  public void setSnapshot(String group, Snapshot snapshot) {
    cache.setSnapshot(group, snapshot);
  }

  /** java-control-plane has no way to mark a resource do_not_cache. */
  @Override
  public void setDoNotCache(Set<String> names) {
    throw new UnsupportedOperationException("java-control-plane cannot send do_not_cache");
  }

  @Override
  public long responsesSent() {
    return responses.get();
  }

  /** The node group (node.cluster) of every ADS stream opened to this control plane so far. */
  public List<String> streamGroups() {
    return List.copyOf(streamGroups.values());
  }

  /**
   * The node id of every ADS stream opened to this control plane so far, one entry per stream: who
   * opened it, when several proxies (each with its own upstream node id) share this control plane.
   */
  public List<String> streamNodeIds() {
    return List.copyOf(streamNodeIds.values());
  }

  /** The node id of every ADS stream open now, one entry per stream. */
  public List<String> openStreamNodeIds() {
    return streamNodeIds.entrySet().stream()
        .filter(stream -> !closedStreams.contains(stream.getKey()))
        .map(Map.Entry::getValue)
        .toList();
  }

  /** How many ADS streams are open now. */
  public long openStreams() {
    return streamGroups.keySet().stream().filter(id -> !closedStreams.contains(id)).count();
  }

  /** Every SotW request received, in order. */
  public List<DiscoveryRequest> requests() {
    return List.copyOf(requests);
  }

  /** Every Delta request received, in order. */
  public List<DeltaDiscoveryRequest> deltaRequests() {
    return List.copyOf(deltaRequests);
  }

  @Override
  public void close() {
    server.shutdownNow();
  }
}
