package io.xdsproxy.bench.jmh;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.xdsproxy.bench.BenchResources;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * One node group of the proxy with {@link #STREAMS} ADS streams of one variant, every client
 * subscribed as Envoy is (wildcard CDS, then EDS for each of {@link #CLUSTERS} clusters) and in
 * sync: each has ACKed everything it was sent. The configuration is the load test's ({@link
 * BenchResources}). A change is a new version of cluster 0, its endpoints or its definition, each a
 * real change.
 */
@State(Scope.Benchmark)
public class GroupOfStreams {

  /**
   * Streams in the group. A constant, not a {@code @Param}: benchmarks divide by it in
   * {@code @OperationsPerInvocation}, which must not disagree with the number of streams.
   */
  public static final int STREAMS = 1000;

  static final int CLUSTERS = 1000;

  /**
   * Each change moves cluster 0's endpoints to another port; rounds wrap here so a port stays a
   * port.
   */
  private static final int PORTS = 50_000;

  @Param({"sotw", "delta"})
  public String variant = "sotw";

  private final int streams;
  private InMemoryUpstream upstream;
  private DirectProxy proxy;
  private final List<EnvoyClient> clients = new ArrayList<>();
  private List<String> endpointNames;
  private byte[] sotwEndpointNames;

  /** Clients that joined so far, newcomers included: the next one's node id. */
  private int joinedSoFar;

  private int endpointRound;
  private int clusterRound;

  /**
   * The last change pushed, which every stream's last response (after a cluster change, the one
   * before) carries.
   */
  private XdsResource latest;

  /**
   * The latest change was a cluster's, so its assignment followed it: the change is in the response
   * before last.
   */
  private boolean latestFollowed;

  /**
   * How many responses every stream must have been written by now: one per change after the two of
   * subscribing.
   */
  private long responsesEach;

  public GroupOfStreams() {
    this(STREAMS);
  }

  /** A group of fewer streams, for tests that run the benchmarks once. */
  GroupOfStreams(int streams) {
    this.streams = streams;
  }

  @Setup(Level.Trial)
  public void connect() throws UnknownHostException {
    upstream = new InMemoryUpstream();
    for (int i = 0; i < CLUSTERS; i++) {
      upstream.put(TypeUrl.CLUSTER, resource(BenchResources.cluster(i, 0)));
      upstream.put(TypeUrl.ENDPOINT, resource(BenchResources.endpoints(i, 0)));
    }
    latest = resource(BenchResources.endpoints(0, 0));
    proxy = new DirectProxy(upstream);
    List<String> names = BenchResources.clusterNames(CLUSTERS);
    byte[] sotwNames = EnvoyClient.Sotw.encodeNames(names);
    endpointNames = names;
    sotwEndpointNames = sotwNames;
    for (int i = 0; i < streams; i++) {
      clients.add(joined(i));
    }
    joinedSoFar = streams;
    responsesEach = 2;
    checkEveryStreamHasTheLatestChange();
  }

  /**
   * Client {@code i} connects and subscribes as Envoy does, wildcard CDS then EDS for every
   * cluster, ACKing each of its two first responses.
   */
  private EnvoyClient joined(int i) throws UnknownHostException {
    Node node = Node.newBuilder().setId("client-" + i).setCluster("group-0").build();
    SocketAddress peer =
        new InetSocketAddress(
            InetAddress.getByAddress(new byte[] {10, 1, (byte) (i >> 8), (byte) i}),
            40000 + i % 20000);
    EnvoyClient client =
        switch (variant) {
          case "sotw" -> new EnvoyClient.Sotw(proxy, node, peer, sotwEndpointNames);
          case "delta" -> new EnvoyClient.Delta(proxy, node, peer, endpointNames);
          default -> throw new IllegalArgumentException("variant is sotw or delta, not " + variant);
        };
    client.subscribeClusters();
    client.ack();
    client.subscribeEndpoints();
    client.ack();
    return client;
  }

  /**
   * A newcomer joins the group (one client of a reconnect storm): it is sent the group's whole
   * state, CDS then EDS, and leaves. Returns it, its stream ended.
   */
  EnvoyClient newcomer() throws UnknownHostException {
    EnvoyClient client = joined(joinedSoFar++);
    RecordingCall<?> call = client.call();
    if (call.closedWith() != null || call.responses() != 2) {
      throw new IllegalStateException(
          variant
              + " newcomer "
              + joinedSoFar
              + " was written "
              + call.responses()
              + " responses, expected its two first states; closed with "
              + call.closedWith());
    }
    call.halfClose();
    return client;
  }

  /** The upstream sends a new version of cluster 0's endpoints; every stream is sent it. */
  void changeEndpoints() {
    endpointRound++;
    change(TypeUrl.ENDPOINT, resource(BenchResources.endpoints(0, endpointRound % PORTS)));
  }

  /**
   * The upstream sends a new version of cluster 0 itself; every stream is sent it (SotW: with every
   * other cluster), then cluster 0's assignment, unchanged, which an Envoy warms the cluster with.
   */
  void changeCluster() {
    clusterRound++;
    change(TypeUrl.CLUSTER, resource(BenchResources.cluster(0, clusterRound)));
  }

  private void change(TypeUrl type, XdsResource resource) {
    latest = resource;
    latestFollowed = type.equals(TypeUrl.CLUSTER);
    responsesEach += latestFollowed ? 2 : 1;
    upstream.put(type, resource);
  }

  /** Every client ACKs the last response it was sent. */
  void ackAll() {
    for (int i = 0; i < clients.size(); i++) {
      clients.get(i).ack();
    }
  }

  /**
   * Every stream is open, was written exactly one response per change, and its last response holds
   * the latest change: the benchmark measured real fan-outs. Byte comparisons only, so the check
   * adds nothing to the allocation JMH counts over the iteration.
   */
  @TearDown(Level.Iteration)
  public void checkEveryStreamHasTheLatestChange() {
    byte[] change = latest.body().getValue().toByteArray();
    for (int i = 0; i < clients.size(); i++) {
      RecordingCall<?> call = clients.get(i).call();
      if (call.closedWith() != null) {
        throw new IllegalStateException(
            variant + " stream " + i + " was closed: " + call.closedWith());
      }
      if (call.responses() != responsesEach) {
        throw new IllegalStateException(
            variant
                + " stream "
                + i
                + " was written "
                + call.responses()
                + " responses, expected "
                + responsesEach
                + " (two to subscribe, one per change, and an assignment"
                + " after each cluster change)");
      }
      if (latestFollowed
          ? !call.responseBeforeLastHolds(change)
          : !call.lastResponseHolds(change)) {
        throw new IllegalStateException(
            variant
                + " stream "
                + i
                + ": its last response lacks the latest change of "
                + latest.name()
                + " (version "
                + latest.version()
                + ")");
      }
    }
  }

  @TearDown(Level.Trial)
  public void disconnect() {
    clients.forEach(client -> client.call().halfClose());
    clients.clear();
    proxy.close();
  }

  List<EnvoyClient> clients() {
    return clients;
  }

  DirectProxy proxy() {
    return proxy;
  }

  /** The last change pushed. */
  XdsResource latest() {
    return latest;
  }

  private static XdsResource resource(Cluster cluster) {
    return XdsResource.of(cluster.getName(), Any.pack(cluster));
  }

  private static XdsResource resource(ClusterLoadAssignment endpoints) {
    return XdsResource.of(endpoints.getClusterName(), Any.pack(endpoints));
  }
}
