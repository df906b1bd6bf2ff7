package io.xdsproxy.bench;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Simulated xDS clients that behave like Envoy on ADS: a wildcard CDS subscription, then EDS for
 * every cluster it got, ACKing each response. Unlike Envoy, every request carries the node:
 * java-control-plane forgets it otherwise. SotW or Delta per client, spread over node groups
 * (node.cluster {@code group-i}), several streams per connection if asked. Each client notes the
 * moment it holds a new round's endpoints of cluster 0 (compared by bytes: the proxy passes the
 * control plane's encoding through) and ACKs it.
 */
final class LoadClients implements AutoCloseable {

  private static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
  private static final String EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

  private final InetSocketAddress target;
  private final int groups;
  private final List<String> clusterNames;
  /**
   * The EDS names as UTF-8 bytes: a SotW client repeats all of them in every EDS ACK, and a request
   * built from bytes is written without encoding each name again, which keeps the load generator's
   * own CPU (on the same cores as the server it measures) small.
   */
  private final List<ByteString> clusterNameBytes;
  private final double deltaShare;
  private final int streamsPerConnection;
  private final BenchResources.Change change;
  private final EventLoopGroup loop = new NioEventLoopGroup(2);
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final List<Client> clients = new ArrayList<>();
  private final Map<Integer, Any> rounds = new ConcurrentHashMap<>();
  private final AtomicLong bytesReceived = new AtomicLong();
  private final AtomicInteger failed = new AtomicInteger();

  LoadClients(InetSocketAddress target, int groups, int clusters, double deltaShare, int streamsPerConnection,
      BenchResources.Change change) {
    this.change = change;
    this.target = target;
    this.groups = groups;
    this.clusterNames = BenchResources.clusterNames(clusters);
    this.clusterNameBytes = clusterNames.stream().map(ByteString::copyFromUtf8).toList();
    this.deltaShare = deltaShare;
    this.streamsPerConnection = streamsPerConnection;
  }

  /** Opens clients until there are {@code total}, a few hundred at a time so the listener's backlog is not flooded. */
  void openUpTo(int total) throws InterruptedException {
    while (clients.size() < total) {
      int index = clients.size();
      if (index % streamsPerConnection == 0) {
        channels.add(NettyChannelBuilder.forAddress(target)
            .usePlaintext()
            .eventLoopGroup(loop)
            .channelType(NioSocketChannel.class)
            .directExecutor()
            .maxInboundMessageSize(64 * 1024 * 1024)
            .build());
      }
      ManagedChannel channel = channels.get(channels.size() - 1);
      // Delta clients spread evenly: client i is Delta when the share's running count steps up at i.
      boolean delta = (int) ((index + 1) * deltaShare) > (int) (index * deltaShare);
      Node node = Node.newBuilder().setId("client-" + index).setCluster(BenchControlPlane.groupName(index % groups)).build();
      Client client = delta ? new DeltaClient(node) : new SotwClient(node);
      clients.add(client);
      client.start(channel);
      if (index % 200 == 199) {
        Thread.sleep(20);
      }
    }
  }

  int size() {
    return clients.size();
  }

  /** How many clients hold round {@code round} of cluster 0 and have ACKed it. */
  int holding(int round) {
    int count = 0;
    for (Client client : clients) {
      count += client.round >= round ? 1 : 0;
    }
    return count;
  }

  /** Per client that holds {@code round}, nanoseconds from {@code since} until it did. */
  long[] latencies(int round, long since) {
    return clients.stream().filter(c -> c.round == round).mapToLong(c -> c.roundAt - since).sorted().toArray();
  }

  long bytesReceived() {
    return bytesReceived.get();
  }

  /** Streams that ended with an error: none should. */
  int failed() {
    return failed.get();
  }

  /** The type whose responses carry the change the clients wait for. */
  private String watched() {
    return change == BenchResources.Change.CLUSTER ? CDS : EDS;
  }

  private Any expected(int round) {
    return rounds.computeIfAbsent(round, r -> BenchResources.changed(change, r));
  }

  @Override
  public void close() throws InterruptedException {
    channels.forEach(ManagedChannel::shutdownNow);
    for (ManagedChannel channel : channels) {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    }
    loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
  }

  private abstract class Client {
    /** The newest round of cluster 0 this client holds, and when it got it. */
    volatile int round = -1;
    volatile long roundAt;

    abstract void start(ManagedChannel channel);

    /** Notes round {@code round + 1} if {@code holds} says the response carried it. */
    final void check(java.util.function.Predicate<Any> holds) {
      int next = round + 1;
      if (holds.test(expected(next))) {
        roundAt = System.nanoTime();
        round = next;
      }
    }
  }

  private final class SotwClient extends Client implements StreamObserver<DiscoveryResponse> {
    private final Node node;
    private StreamObserver<DiscoveryRequest> requests;
    private boolean endpointsAsked;

    SotwClient(Node node) {
      this.node = node;
    }

    @Override
    void start(ManagedChannel channel) {
      requests = AggregatedDiscoveryServiceGrpc.newStub(channel).streamAggregatedResources(this);
      requests.onNext(DiscoveryRequest.newBuilder().setNode(node).setTypeUrl(CDS).build());
    }

    @Override
    public void onNext(DiscoveryResponse response) {
      bytesReceived.addAndGet(response.getSerializedSize());
      DiscoveryRequest.Builder ack = DiscoveryRequest.newBuilder().setNode(node).setTypeUrl(response.getTypeUrl())
          .setVersionInfo(response.getVersionInfo()).setResponseNonce(response.getNonce());
      if (response.getTypeUrl().equals(watched())) {
        check(response.getResourcesList()::contains);
      }
      if (response.getTypeUrl().equals(EDS)) {
        clusterNameBytes.forEach(ack::addResourceNamesBytes);
        requests.onNext(ack.build());
      } else {
        requests.onNext(ack.build());
        if (!endpointsAsked) {
          endpointsAsked = true;
          requests.onNext(DiscoveryRequest.newBuilder().setNode(node).setTypeUrl(EDS).addAllResourceNames(clusterNames).build());
        }
      }
    }

    @Override
    public void onError(Throwable t) {
      failed.incrementAndGet();
    }

    @Override
    public void onCompleted() {}
  }

  private final class DeltaClient extends Client implements StreamObserver<DeltaDiscoveryResponse> {
    private final Node node;
    private StreamObserver<DeltaDiscoveryRequest> requests;
    private boolean endpointsAsked;

    DeltaClient(Node node) {
      this.node = node;
    }

    @Override
    void start(ManagedChannel channel) {
      requests = AggregatedDiscoveryServiceGrpc.newStub(channel).deltaAggregatedResources(this);
      requests.onNext(DeltaDiscoveryRequest.newBuilder().setNode(node).setTypeUrl(CDS).build());
    }

    @Override
    public void onNext(DeltaDiscoveryResponse response) {
      bytesReceived.addAndGet(response.getSerializedSize());
      requests.onNext(DeltaDiscoveryRequest.newBuilder().setNode(node).setTypeUrl(response.getTypeUrl())
          .setResponseNonce(response.getNonce()).build());
      if (response.getTypeUrl().equals(watched())) {
        String changed = BenchResources.clusterName(0);
        check(expected -> response.getResourcesList().stream()
            .anyMatch(r -> r.getName().equals(changed) && r.getResource().equals(expected)));
      }
      if (!response.getTypeUrl().equals(EDS) && !endpointsAsked) {
        endpointsAsked = true;
        requests.onNext(DeltaDiscoveryRequest.newBuilder().setNode(node).setTypeUrl(EDS)
            .addAllResourceNamesSubscribe(clusterNames).build());
      }
    }

    @Override
    public void onError(Throwable t) {
      failed.incrementAndGet();
    }

    @Override
    public void onCompleted() {}
  }
}
