package io.xdsproxy.bench;

import com.google.protobuf.MessageLite;
import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.controlplane.server.V3DiscoveryServer;
import io.grpc.ForwardingServerCall.SimpleForwardingServerCall;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.NettyServerBuilder;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The upstream of the benchmark, in its own process: java-control-plane's V3DiscoveryServer over a
 * SimpleCache keyed by node.cluster, one snapshot per node group, all alike. Driven over stdin
 * ({@link StdinCommands}): {@code update} moves cluster 0's endpoints (or changes cluster 0) in
 * every group.
 *
 * <p>Usage: {@code BenchControlPlane GROUPS CLUSTERS [ENDPOINTS|CLUSTER [TLS_DIR PROVIDER]]} (what
 * an update changes; with a directory of {@link BenchTls}'s certificates, mutual TLS on the
 * provider, as the proxy's xDS port, when it serves the clients directly). It does not check the
 * clients' identities: java-control-plane has no such check, which is part of what the proxy adds.
 */
public final class BenchControlPlane {

  private final SimpleCache<String> cache = new SimpleCache<>(node -> node.getCluster());
  private final int groups;
  private final int clusters;
  private final BenchResources.Change change;
  private final AtomicInteger streams = new AtomicInteger();
  private final AtomicLong messages = new AtomicLong();
  private final AtomicLong bytes = new AtomicLong();
  private int round;

  private BenchControlPlane(int groups, int clusters, BenchResources.Change change) {
    this.groups = groups;
    this.clusters = clusters;
    this.change = change;
  }

  static String groupName(int group) {
    return "group-" + group;
  }

  public static void main(String[] args) throws Exception {
    BenchControlPlane plane =
        new BenchControlPlane(
            Integer.parseInt(args[0]),
            Integer.parseInt(args[1]),
            args.length > 2
                ? BenchResources.Change.valueOf(args[2])
                : BenchResources.Change.ENDPOINTS);
    plane.publish();
    Optional<BenchTls.Serving> tls = BenchTls.serving(args, 3);
    InetSocketAddress address = new InetSocketAddress("127.0.0.1", 0);
    Server server =
        (tls.isPresent()
                ? NettyServerBuilder.forAddress(address, tls.get().credentials())
                : NettyServerBuilder.forAddress(address))
            .addService(
                ServerInterceptors.intercept(
                    new V3DiscoveryServer(plane.cache).getAggregatedDiscoveryServiceImpl(),
                    plane.new Counting()))
            .maxInboundMessageSize(64 * 1024 * 1024)
            .build()
            .start();
    StdinCommands.serve(
        server,
        tls.map(BenchTls.Serving::provider),
        () -> {
          plane.round++;
          plane.publish();
          return plane.round;
        },
        () -> plane.streams.get() + " " + plane.messages.get() + " " + plane.bytes.get());
  }

  /** Sets every group's snapshot to the current round of what changes. */
  private void publish() {
    boolean clustersChange = change == BenchResources.Change.CLUSTER;
    Snapshot snapshot =
        Snapshot.create(
            BenchResources.clusters(clusters, clustersChange ? round : 0),
            BenchResources.allEndpoints(clusters, clustersChange ? 0 : round),
            List.of(),
            List.of(),
            List.of(),
            Integer.toString(round));
    for (int group = 0; group < groups; group++) {
      cache.setSnapshot(groupName(group), snapshot);
    }
  }

  /** Counts open streams and what is written on them. */
  private final class Counting implements ServerInterceptor {
    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
        ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
      streams.incrementAndGet();
      ServerCall<Q, R> counted =
          new SimpleForwardingServerCall<>(call) {
            @Override
            public void sendMessage(R message) {
              messages.incrementAndGet();
              bytes.addAndGet(((MessageLite) message).getSerializedSize());
              super.sendMessage(message);
            }
          };
      return new SimpleForwardingServerCallListener<>(next.startCall(counted, headers)) {
        private final AtomicBoolean ended = new AtomicBoolean();

        @Override
        public void onCancel() {
          end();
          super.onCancel();
        }

        @Override
        public void onComplete() {
          end();
          super.onComplete();
        }

        private void end() {
          if (ended.compareAndSet(false, true)) {
            streams.decrementAndGet();
          }
        }
      };
    }
  }
}
