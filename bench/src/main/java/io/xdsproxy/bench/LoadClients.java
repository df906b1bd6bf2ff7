package io.xdsproxy.bench;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.xdsproxy.bench.ReceivedResponse.Expected;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/**
 * Simulated xDS clients that behave like Envoy on ADS: a wildcard CDS subscription, then EDS for
 * every cluster it got, ACKing each response. Unlike Envoy, every request carries the node:
 * java-control-plane forgets it otherwise. SotW or Delta per client, spread over node groups
 * (node.cluster {@code group-i}), several streams per connection if asked. Each client notes the
 * moment it holds a new round's endpoints of cluster 0 (compared by bytes: the proxy passes the
 * control plane's encoding through) and ACKs it. Connections can be closed and opened again with
 * new clients (churn), which catch up on whatever round the control plane has made by then.
 *
 * <p>The clients run on the same cores as the server they measure, so each is as cheap as a client
 * can be: a response is not decoded, only scanned in place for the version, nonce and type URL it
 * ACKs and for the changed resource's expected bytes ({@link ReceivedResponse}), and requests are
 * written from parts encoded once ({@link EncodedRequest}). What goes over the wire is what a
 * client that decodes everything with protobuf would send.
 *
 * <p>With TLS ({@link BenchTls}), each connection presents its node group's certificate, and a
 * client's node id starts with the certificate's SPIFFE id.
 */
final class LoadClients implements AutoCloseable {

  private static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
  private static final String EDS =
      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
  private static final byte[] CDS_BYTES = CDS.getBytes(StandardCharsets.UTF_8);
  private static final byte[] EDS_BYTES = EDS.getBytes(StandardCharsets.UTF_8);
  private static final byte[] SOTW_CDS = EncodedRequest.sotwTypeUrl(CDS);
  private static final byte[] SOTW_EDS = EncodedRequest.sotwTypeUrl(EDS);
  private static final byte[] DELTA_CDS = EncodedRequest.deltaTypeUrl(CDS);
  private static final byte[] DELTA_EDS = EncodedRequest.deltaTypeUrl(EDS);
  private static final byte[] NO_NAMES = new byte[0];

  /** The name of the resource that changes, as a Delta response names it. */
  private static final byte[] CHANGED =
      BenchResources.clusterName(0).getBytes(StandardCharsets.UTF_8);

  /** ADS with this package's marshallers: requests from parts, responses read in place. */
  private static final MethodDescriptor<EncodedRequest, ReceivedResponse> SOTW =
      AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod().toBuilder(
              EncodedRequest.MARSHALLER, ReceivedResponse.MARSHALLER)
          .build();

  private static final MethodDescriptor<EncodedRequest, ReceivedResponse> DELTA =
      AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod().toBuilder(
              EncodedRequest.MARSHALLER, ReceivedResponse.MARSHALLER)
          .build();

  private final InetSocketAddress target;
  private final int groups;

  /**
   * Every cluster's name, encoded once as the names of an EDS request: a SotW client repeats all of
   * them in every EDS ACK, the same bytes for every client.
   */
  private final byte[] clusterNames;

  private final double deltaShare;
  private final String idPrefix;
  private final BenchTls tls;
  private final int streamsPerConnection;
  private final BenchResources.Change change;
  private final EventLoopGroup loop = new NioEventLoopGroup(2);
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final List<Client> clients = new ArrayList<>();
  private final Map<Integer, Expected> rounds = new ConcurrentHashMap<>();
  private final AtomicLong bytesReceived = new AtomicLong();
  private final AtomicLong responsesReceived = new AtomicLong();
  private final AtomicInteger failed = new AtomicInteger();

  /**
   * By round, how many of the clients in {@link #clients} hold it or a later one: kept as clients
   * move on, so that {@link #holding}, which the bench polls every few milliseconds while it waits,
   * costs nothing. Counting by walking every client took the load generator a fifth of a core at
   * 10,000 clients, in proportion to how long the wait was, on the cores the server measured
   * shares.
   */
  private final Map<Integer, AtomicInteger> holdingByRound = new ConcurrentHashMap<>();

  /** Clients opened so far, reopened ones included: the next client's node id. */
  private int opened;

  /** The connection {@link #reconnect} closes next: the one open longest. */
  private int nextToReconnect;

  /** The newest round the control plane is known to have made, -1 if nobody said. */
  private volatile int newestRound = -1;

  LoadClients(
      InetSocketAddress target,
      int groups,
      int clusters,
      double deltaShare,
      int streamsPerConnection,
      BenchResources.Change change,
      BenchTls tls) {
    this(target, groups, clusters, deltaShare, streamsPerConnection, change, tls, "client-");
  }

  /**
   * Clients whose node ids begin with {@code idPrefix} (after their SPIFFE id with TLS): two sets
   * of clients of one server (the established and the newcomers of a storm) are told apart.
   */
  LoadClients(
      InetSocketAddress target,
      int groups,
      int clusters,
      double deltaShare,
      int streamsPerConnection,
      BenchResources.Change change,
      BenchTls tls,
      String idPrefix) {
    this.idPrefix = idPrefix;
    this.tls = tls;
    this.change = change;
    this.target = target;
    this.groups = groups;
    this.clusterNames = EncodedRequest.names(BenchResources.clusterNames(clusters));
    this.deltaShare = deltaShare;
    this.streamsPerConnection = streamsPerConnection;
  }

  /**
   * Opens clients until there are {@code total}, a few hundred at a time so the listener's backlog
   * is not flooded.
   */
  void openUpTo(int total) throws InterruptedException {
    while (clients.size() < total) {
      int index = clients.size();
      if (index % streamsPerConnection == 0) {
        channels.add(newChannel(group(index)));
      }
      Client client = newClient(index);
      clients.add(client);
      client.start(channels.get(channels.size() - 1));
      if (index % 200 == 199) {
        Thread.sleep(20);
      }
    }
  }

  /**
   * Closes the {@code connections} connections open longest, and in the place of each opens a new
   * connection with new clients (new streams, new node ids, the same node groups and protocols), as
   * restarted Envoys would. The streams closed here do not count as failed.
   */
  void reconnect(int connections) {
    for (int n = 0; n < connections; n++) {
      int connection = nextToReconnect;
      nextToReconnect = (connection + 1) % channels.size();
      int first = connection * streamsPerConnection;
      int end = Math.min(clients.size(), first + streamsPerConnection);
      for (int index = first; index < end; index++) {
        clients.get(index).retire();
      }
      channels.get(connection).shutdownNow();
      ManagedChannel channel = newChannel(group(first));
      channels.set(connection, channel);
      for (int index = first; index < end; index++) {
        Client client = newClient(index);
        clients.set(index, client);
        client.start(channel);
      }
    }
  }

  /**
   * The control plane has made round {@code round}: a client that joins later may hold it, or any
   * round since the one it holds.
   */
  void roundMade(int round) {
    newestRound = round;
  }

  /**
   * A connection of node group {@code group}'s clients: with TLS, presenting the group's
   * certificate.
   */
  private ManagedChannel newChannel(int group) {
    return NettyChannelBuilder.forAddress(target, tls.channel(group))
        .eventLoopGroup(loop)
        .channelType(NioSocketChannel.class)
        .directExecutor()
        .maxInboundMessageSize(64 * 1024 * 1024)
        .build();
  }

  /**
   * The node group of the client in place {@code index}: clients take the groups in turn. With TLS
   * a connection's streams are all of one group, as its certificate is one identity: the
   * connections take the groups in turn.
   */
  private int group(int index) {
    return (tls.mutual() ? index / streamsPerConnection : index) % groups;
  }

  /** A new client in place {@code index}, which decides its node group and protocol. */
  private Client newClient(int index) {
    // Delta clients spread evenly: client i is Delta when the share's running count steps up at i.
    boolean delta = (int) ((index + 1) * deltaShare) > (int) (index * deltaShare);
    int group = group(index);
    Node node =
        Node.newBuilder()
            .setId(tls.nodeId(group, idPrefix + opened++))
            .setCluster(BenchControlPlane.groupName(group))
            .build();
    return delta ? new DeltaClient(node) : new SotwClient(node);
  }

  int size() {
    return clients.size();
  }

  /** How many clients hold round {@code round} of cluster 0 and have ACKed it. */
  int holding(int round) {
    AtomicInteger holding = holdingByRound.get(round);
    return holding == null ? 0 : holding.get();
  }

  /** How many clients hold each round (-1: none yet), to say where the ones that lag are. */
  Map<Integer, Long> roundsHeld() {
    return clients.stream()
        .collect(Collectors.groupingBy(c -> c.round, TreeMap::new, Collectors.counting()));
  }

  /**
   * Per client that holds {@code round} (or a later one), nanoseconds from {@code since} until it
   * first did.
   */
  long[] latencies(int round, long since) {
    return clients.stream()
        .filter(c -> c.round >= round)
        .mapToLong(c -> c.heldAt[round] - since)
        .sorted()
        .toArray();
  }

  long bytesReceived() {
    return bytesReceived.get();
  }

  long responsesReceived() {
    return responsesReceived.get();
  }

  /** Streams that ended with an error, other than those {@link #reconnect} closed: none should. */
  int failed() {
    return failed.get();
  }

  /** The type whose responses carry the change the clients wait for. */
  private byte[] watched() {
    return change == BenchResources.Change.CLUSTER ? CDS_BYTES : EDS_BYTES;
  }

  private Expected expected(int round) {
    return rounds.computeIfAbsent(round, r -> Expected.of(BenchResources.changed(change, r)));
  }

  @Override
  public void close() throws InterruptedException {
    channels.forEach(ManagedChannel::shutdownNow);
    for (ManagedChannel channel : channels) {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    }
    loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
  }

  /** One simulated Envoy: its ADS stream. */
  private abstract class Client implements StreamObserver<ReceivedResponse> {
    /** Whether the client has asked for the assignments of the clusters it was sent. */
    boolean endpointsAsked;

    /** The newest round of cluster 0 this client holds. */
    volatile int round = -1;

    /**
     * When this client first held each round, by round, up to {@link #round}: a round it was passed
     * by takes the time it held a later one, so that updates made faster than they reach the
     * clients are each measured. Written before {@link #round}, which publishes it.
     */
    long[] heldAt = new long[16];

    /** Set before {@link #reconnect} closes this client's stream, whose error is then expected. */
    volatile boolean closedHere;

    /** The client's node, encoded once as its variant's request carries it. */
    final byte[] node;

    private final MethodDescriptor<EncodedRequest, ReceivedResponse> method;
    private final byte[] firstRequest;
    StreamObserver<EncodedRequest> requests;

    Client(
        byte[] node,
        MethodDescriptor<EncodedRequest, ReceivedResponse> method,
        byte[] firstRequest) {
      this.node = node;
      this.method = method;
      this.firstRequest = firstRequest;
    }

    /**
     * Opens the client's stream on {@code channel} and asks for the clusters. The stream waits for
     * the connection, through its reconnections, as a real client retries its stream: thousands of
     * TLS clients connecting at once on two cores take longer than the 10 s Netty gives a client's
     * handshake, and a fail-fast stream whose first connection timed out was lost for good (a third
     * of 10,000 connected, the rest waited forever).
     */
    final void start(ManagedChannel channel) {
      requests =
          ClientCalls.asyncBidiStreamingCall(
              channel.newCall(method, CallOptions.DEFAULT.withWaitForReady()), this);
      requests.onNext(new EncodedRequest(node, firstRequest));
    }

    /**
     * Notes the newest round whose changed resource the response carries, of those after the one
     * this client holds: the next round, or a later one for a client that joined late or was passed
     * by.
     */
    final void check(ReceivedResponse response) {
      // One past the newest known: the control plane's newest round can reach a client before
      // roundMade.
      for (int candidate = Math.max(newestRound + 1, round + 1); candidate > round; candidate--) {
        if (carries(response, expected(candidate))) {
          held(candidate, System.nanoTime());
          return;
        }
      }
    }

    private synchronized void held(int newest, long at) {
      if (newest >= heldAt.length) {
        heldAt = Arrays.copyOf(heldAt, Math.max(newest + 1, 2 * heldAt.length));
      }
      Arrays.fill(heldAt, Math.max(round + 1, 0), newest + 1, at);
      if (!closedHere) {
        for (int passed = Math.max(round + 1, 0); passed <= newest; passed++) {
          holdingByRound.computeIfAbsent(passed, r -> new AtomicInteger()).incrementAndGet();
        }
      }
      round = newest;
    }

    /**
     * The client is about to be closed and replaced ({@link #reconnect}): it no longer counts as
     * holding anything, whatever its stream still receives.
     */
    synchronized void retire() {
      closedHere = true;
      for (int passed = 0; passed <= round; passed++) {
        holdingByRound.get(passed).decrementAndGet();
      }
    }

    /** Whether {@code response} carries the changed resource as {@code expected}. */
    abstract boolean carries(ReceivedResponse response, Expected expected);

    @Override
    public final void onError(Throwable t) {
      if (!closedHere) {
        failed.incrementAndGet();
      }
    }

    @Override
    public final void onCompleted() {}
  }

  private final class SotwClient extends Client {
    SotwClient(Node node) {
      super(EncodedRequest.sotwNode(node), SOTW, SOTW_CDS);
    }

    @Override
    boolean carries(ReceivedResponse response, Expected expected) {
      return response.sotwCarries(expected);
    }

    @Override
    public void onNext(ReceivedResponse response) {
      bytesReceived.addAndGet(response.size());
      responsesReceived.incrementAndGet();
      if (response.typeIs(watched())) {
        check(response);
      }
      if (response.typeIs(EDS_BYTES)) {
        requests.onNext(EncodedRequest.sotwAck(node, response, clusterNames));
      } else {
        requests.onNext(EncodedRequest.sotwAck(node, response, NO_NAMES));
        if (!endpointsAsked) {
          endpointsAsked = true;
          requests.onNext(new EncodedRequest(node, clusterNames, SOTW_EDS));
        }
      }
    }
  }

  private final class DeltaClient extends Client {
    DeltaClient(Node node) {
      super(EncodedRequest.deltaNode(node), DELTA, DELTA_CDS);
    }

    @Override
    boolean carries(ReceivedResponse response, Expected expected) {
      return response.deltaCarries(CHANGED, expected);
    }

    @Override
    public void onNext(ReceivedResponse response) {
      bytesReceived.addAndGet(response.size());
      responsesReceived.incrementAndGet();
      requests.onNext(EncodedRequest.deltaAck(node, response));
      if (response.typeIs(watched())) {
        check(response);
      }
      if (!response.typeIs(EDS_BYTES) && !endpointsAsked) {
        endpointsAsked = true;
        requests.onNext(new EncodedRequest(node, DELTA_EDS, clusterNames));
      }
    }
  }
}
