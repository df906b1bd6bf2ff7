package io.xdsproxy.app;

import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.xdsproxy.app.testing.ControlPlaneCell;
import io.xdsproxy.app.testing.ConvergenceChecker;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.VariantClient;
import io.xdsproxy.app.testing.VariantClient.Variant;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.grpc.Backoff;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntFunction;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 7: faults on either side of the proxy, each with real peers on loopback (upstream a control
 * plane of each kind, {@link ControlPlaneCell#representativeCells}: java-control-plane and the
 * models of istiod and go-control-plane; raw xDS clients of every variant downstream), each ending
 * with invariant 2 checked by {@link ConvergenceChecker}: whatever happened, every client holds
 * what the upstream serves for what it subscribed to, and ACKed it.
 */
class FaultsTest {

  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final String GROUP = "fleet";

  /**
   * Reconnects to the control plane quickly, so that a test waits for the fault, not the backoff.
   */
  private static final Backoff QUICK =
      new Backoff(Duration.ofMillis(50), Duration.ofMillis(500), 2.0, 0.2);

  /**
   * Endpoints every client asks for by name, two that exist in every fleet below. Not a name that
   * never exists: java-control-plane over ADS answers no request naming a resource its snapshot
   * lacks, so the whole type would go unanswered.
   */
  private static final String[] ENDPOINT_NAMES = {"c-0", "c-1"};

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  /**
   * {@code count} clusters c-0, c-1, … with their endpoints; {@code generation} is in their bytes
   * (connect timeout, endpoint port), so fleets of different generations differ in every resource.
   */
  private static Snapshot fleet(String version, int count, int generation) {
    return fleet(
        version, IntStream.range(0, count).mapToObj(i -> "c-" + i).toList(), i -> generation);
  }

  /**
   * Clusters {@code names} with their endpoints, the bytes of the one at index i made of {@code
   * generationOf}(i).
   */
  private static Snapshot fleet(
      String version, List<String> names, IntFunction<Integer> generationOf) {
    List<Cluster> clusters = new ArrayList<>();
    List<ClusterLoadAssignment> endpoints = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      int generation = generationOf.apply(i);
      clusters.add(
          Resources.cluster(names.get(i)).toBuilder()
              .setConnectTimeout(
                  com.google.protobuf.Duration.newBuilder().setSeconds(1 + generation % 1000))
              .build());
      endpoints.add(Resources.endpoints(names.get(i), 1024 + generation % 60000));
    }
    return Snapshot.create(clusters, endpoints, List.of(), List.of(), List.of(), version);
  }

  private static ProxyConfig config(String... upstream) {
    return ProxyConfig.DEFAULTS
        .withUpstream(upstream)
        .withPorts(0, 0, 0)
        .withUpstreamBackoff(QUICK)
        .withNotFoundTimeout(Duration.ofSeconds(1));
  }

  private static ProxyConfig config(ControlPlaneCell cell, UpstreamControlPlane controlPlane) {
    return config(controlPlane.target()).withUpstreamProtocol(cell.upstream());
  }

  /**
   * A client of each variant, named {@code prefix}-variant, each subscribed to every cluster
   * (wildcard) and to the endpoints of a few by name.
   */
  private List<VariantClient> everyVariant(int port, String prefix) {
    List<VariantClient> clients = new ArrayList<>();
    for (Variant variant : Variant.values()) {
      VariantClient client =
          fixture.add(new VariantClient(variant, port, node(prefix + "-" + variant, GROUP)));
      client.subscribe(TypeUrl.CLUSTER);
      client.subscribe(TypeUrl.ENDPOINT, ENDPOINT_NAMES);
      clients.add(client);
    }
    return clients;
  }

  private static void awaitConverged(Snapshot served, List<VariantClient> clients, Duration bound) {
    new ConvergenceChecker().upstream(GROUP, served).clients(clients).awaitConverged(bound);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void clientsConvergeWhenTheUpstreamComesUpAfterTheProxyStarted(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    controlPlane.stop();
    XdsProxy proxy = fixture.proxy(config(cell, controlPlane));
    List<VariantClient> clients = everyVariant(proxy.xdsPort(), "early");
    clients.forEach(VariantClient::pump);
    assertThat(proxy.ready()).as("ready before the upstream was ever reached").isFalse();
    assertThat(clients).allSatisfy(client -> assertThat(client.held(TypeUrl.CLUSTER)).isEmpty());

    Snapshot served = fleet("1", 50, 1);
    controlPlane.setSnapshot(GROUP, served);
    controlPlane.start();

    awaitConverged(served, clients, WAIT);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void clientsConvergeToTheNewerStateWhenTheUpstreamRestartsInTheMiddleOfALargePush(
      ControlPlaneCell cell) throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = fixture.proxy(config(cell, controlPlane));
    Snapshot small = fleet("1", 10, 1);
    controlPlane.setSnapshot(GROUP, small);
    List<VariantClient> clients = everyVariant(proxy.xdsPort(), "pushed");
    awaitConverged(small, clients, WAIT);

    controlPlane.setSnapshot(GROUP, fleet("2", 1500, 2));
    // The push has reached a client: the others may still be on their way.
    await()
        .atMost(WAIT)
        .pollInterval(Duration.ofMillis(5))
        .until(
            () -> {
              clients.forEach(VariantClient::pump);
              return clients.stream().anyMatch(client -> client.held(TypeUrl.CLUSTER).size() > 10);
            });
    controlPlane.stop();
    Snapshot newer = fleet("3", 1200, 3);
    controlPlane.setSnapshot(GROUP, newer);
    controlPlane.start();

    awaitConverged(newer, clients, WAIT);
  }

  @Test
  void
      aControlPlaneThatAcceptsTcpButNeverAnswersIsLeftForTheNextAddressOnceKeepaliveGoesUnanswered()
          throws Exception {
    // The kernel completes the TCP handshake of a connection in the backlog: the socket accepts,
    // and nothing ever reads or writes, so the HTTP/2 preface, SETTINGS and PINGs go unanswered.
    ServerSocket silent = fixture.add(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
    ControlPlane controlPlane = fixture.controlPlane();
    Snapshot served = fleet("1", 20, 1);
    controlPlane.setSnapshot(GROUP, served);
    // grpc-java raises a keepalive time under 10 s to 10 s: this is as quick as a channel can
    // notice.
    XdsProxy proxy =
        fixture.proxy(
            config("127.0.0.1:" + silent.getLocalPort(), controlPlane.target())
                .withUpstreamKeepalive(
                    new AdsUpstream.Keepalive(Duration.ofSeconds(10), Duration.ofSeconds(1))));
    List<VariantClient> clients = everyVariant(proxy.xdsPort(), "patient");

    awaitConverged(served, clients, Duration.ofSeconds(25));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void clientsThatVanishInTheMiddleOfALargeResponseDoNotDisturbTheOthers(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = fixture.proxy(config(cell, controlPlane));
    Snapshot large = fleet("1", 2000, 1);
    controlPlane.setSnapshot(GROUP, large);
    List<VariantClient> clients = everyVariant(proxy.xdsPort(), "staying");
    for (int i = 0; i < 20; i++) {
      Variant variant = Variant.values()[i % 4];
      VariantClient quitter =
          fixture.add(new VariantClient(variant, proxy.xdsPort(), node("quitter-" + i, GROUP)));
      quitter.subscribe(TypeUrl.CLUSTER);
      quitter.subscribe(TypeUrl.ENDPOINT, ENDPOINT_NAMES);
      // Half go at once, half once the large response is on its way to them.
      if (i % 2 == 1) {
        await().atMost(WAIT).pollInterval(Duration.ofMillis(1)).until(() -> quitter.pump() > 0);
      }
      quitter.cancel(TypeUrl.CLUSTER);
    }
    awaitConverged(large, clients, WAIT);

    Snapshot changed = fleet("2", 2000, 2);
    controlPlane.setSnapshot(GROUP, changed);
    awaitConverged(changed, clients, WAIT);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void twoThousandClientsDroppedTogetherReconnectTogetherAndConverge(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = fixture.proxy(config(cell, controlPlane));
    Snapshot before = fleet("1", 20, 1);
    controlPlane.setSnapshot(GROUP, before);
    // 2,000 ADS streams, SotW and Delta in turn, 100 to a connection, as 20 hosts of 100 clients
    // would be.
    int connections = 20;
    List<ManagedChannel> channels = channels(proxy.xdsPort(), connections);
    List<VariantClient> clients = new ArrayList<>();
    for (int i = 0; i < 2000; i++) {
      Variant variant = i % 2 == 0 ? Variant.SOTW_ADS : Variant.DELTA_ADS;
      VariantClient client =
          fixture.add(
              new VariantClient(variant, channels.get(i % connections), node("many-" + i, GROUP)));
      client.subscribe(TypeUrl.CLUSTER);
      clients.add(client);
    }
    awaitConverged(before, clients, WAIT);

    channels.forEach(ManagedChannel::shutdownNow);
    Snapshot after = fleet("2", 25, 2);
    controlPlane.setSnapshot(GROUP, after);
    List<ManagedChannel> again = channels(proxy.xdsPort(), connections);
    for (int i = 0; i < clients.size(); i++) {
      clients.get(i).reconnect(again.get(i % connections));
    }

    awaitConverged(after, clients, Duration.ofSeconds(30));
  }

  private List<ManagedChannel> channels(int port, int count) {
    List<ManagedChannel> channels = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      ManagedChannel channel =
          NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
      fixture.add(channel::shutdownNow);
      channels.add(channel);
    }
    return channels;
  }

  /**
   * Over a SotW upstream, whose resource versions the proxy derives from content, so that the
   * restarted proxy gives unchanged resources the versions the clients hold: a Delta upstream's own
   * versions may change with every push (istiod's do).
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.SOTW)
  void deltaClientsReconnectingToARestartedProxyAreSentOnlyWhatChanged(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy first = XdsProxy.start(config(cell, controlPlane));
    int port = first.xdsPort();
    List<String> names = IntStream.range(0, 30).mapToObj(i -> "c-" + i).toList();
    Snapshot before = fleet("1", names, i -> 1);
    controlPlane.setSnapshot(GROUP, before);
    List<VariantClient> clients = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      Variant variant = i % 2 == 0 ? Variant.DELTA_ADS : Variant.DELTA_PER_TYPE;
      VariantClient client =
          fixture.add(new VariantClient(variant, port, node("delta-" + i, GROUP)));
      client.subscribe(TypeUrl.CLUSTER);
      client.subscribe(TypeUrl.ENDPOINT, ENDPOINT_NAMES);
      clients.add(client);
    }
    try {
      awaitConverged(before, clients, WAIT);
    } finally {
      first.close();
    }

    // While the proxy is away: c-0 changes, c-29 goes, c-30 comes; c-1's endpoints change.
    List<String> namesAfter = new ArrayList<>(names.subList(0, 29));
    namesAfter.add("c-30");
    Snapshot after =
        Snapshot.create(
            fleet("2", namesAfter, i -> i == 0 ? 2 : 1).clusters().resources().values(),
            fleet("2", namesAfter, i -> i == 1 ? 2 : 1).endpoints().resources().values(),
            List.of(),
            List.of(),
            List.of(),
            "2");
    controlPlane.setSnapshot(GROUP, after);
    // Clients reconnect as the proxy comes back: those too early are refused and try again.
    clients.forEach(client -> client.reconnect(null));
    XdsProxy second = fixture.proxy(config(cell, controlPlane).withPorts(port, 0, 0));
    await()
        .atMost(WAIT)
        .pollInterval(Duration.ofMillis(100))
        .until(
            () -> {
              clients.stream()
                  .filter(VariantClient::anyStreamEnded)
                  .forEach(client -> client.reconnect(null));
              return clients.stream().noneMatch(VariantClient::anyStreamEnded);
            });

    awaitConverged(after, clients, WAIT);
    for (VariantClient client : clients) {
      assertThat(client.receivedSinceConnect(TypeUrl.CLUSTER))
          .as(
              "%s: clusters sent after reconnecting to %s; transcript:%n%s",
              client.node().getId(), second.xdsPort(), client.transcript(TypeUrl.CLUSTER))
          .extracting(received -> received.substring(0, received.indexOf('@')))
          .containsExactlyInAnyOrder("c-0", "c-30");
      // c-1's endpoints changed; c-0's did not, but its cluster did, which an Envoy warms until its
      // assignment comes: on ADS, where the two types share a stream, it follows (rule 18).
      String[] expected =
          client.variant().ads() ? new String[] {"c-0", "c-1"} : new String[] {"c-1"};
      assertThat(client.receivedSinceConnect(TypeUrl.ENDPOINT))
          .as(
              "%s: endpoints sent after reconnecting; transcript:%n%s",
              client.node().getId(), client.transcript(TypeUrl.ENDPOINT))
          .extracting(received -> received.substring(0, received.indexOf('@')))
          .containsExactlyInAnyOrder(expected);
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void clientsThatComeAndGoDuringAHundredUpstreamUpdatesASecondAllConverge(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = fixture.proxy(config(cell, controlPlane));
    List<String> names = IntStream.range(0, 50).mapToObj(i -> "c-" + i).toList();
    java.util.concurrent.atomic.AtomicReference<Snapshot> latest =
        new java.util.concurrent.atomic.AtomicReference<>(fleet("0", names, i -> 0));
    controlPlane.setSnapshot(GROUP, latest.get());
    java.util.concurrent.ScheduledExecutorService updater =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
    fixture.add(updater::shutdownNow);
    java.util.concurrent.atomic.AtomicInteger updates =
        new java.util.concurrent.atomic.AtomicInteger();
    int total = 300;
    // Update k changes cluster c-(k mod 50) and its endpoints: 100 a second for 3 seconds.
    updater.scheduleAtFixedRate(
        () -> {
          int k = updates.incrementAndGet();
          if (k > total) {
            throw new java.util.concurrent.CancellationException("done");
          }
          Snapshot next =
              fleet(
                  Integer.toString(k),
                  names,
                  i -> i == k % 50 ? k : generationAt(latest.get(), names.get(i)));
          latest.set(next);
          controlPlane.setSnapshot(GROUP, next);
        },
        0,
        10,
        java.util.concurrent.TimeUnit.MILLISECONDS);

    List<VariantClient> present = new ArrayList<>();
    int[] arrivals = {0};
    await()
        .atMost(WAIT)
        .pollInterval(Duration.ofMillis(30))
        .until(
            () -> {
              Variant variant = Variant.values()[arrivals[0] % 4];
              VariantClient arriving =
                  fixture.add(
                      new VariantClient(
                          variant, proxy.xdsPort(), node("passing-" + arrivals[0], GROUP)));
              arrivals[0]++;
              arriving.subscribe(TypeUrl.CLUSTER);
              arriving.subscribe(TypeUrl.ENDPOINT, ENDPOINT_NAMES);
              present.add(arriving);
              if (present.size() > 12) {
                present.remove(arrivals[0] % present.size()).close();
              }
              present.forEach(VariantClient::pump);
              return updates.get() > total;
            });

    assertThat(arrivals[0]).as("clients that came during the updates").isGreaterThan(20);
    awaitConverged(latest.get(), present, WAIT);
  }

  /**
   * The generation a cluster of {@code snapshot} was made of, read back from its connect timeout.
   */
  private static int generationAt(Snapshot snapshot, String name) {
    return (int) snapshot.clusters().resources().get(name).getConnectTimeout().getSeconds() - 1;
  }
}
