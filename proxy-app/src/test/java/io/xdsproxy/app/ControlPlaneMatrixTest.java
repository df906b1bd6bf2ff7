package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.xdsproxy.app.testing.ControlPlaneCell;
import io.xdsproxy.app.testing.ConvergenceChecker;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.VariantClient;
import io.xdsproxy.app.testing.VariantClient.Variant;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.grpc.Backoff;
import io.xdsproxy.upstream.testing.ControlPlaneKind;
import io.xdsproxy.upstream.testing.EnvoyLikeClient;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 14, item 5: the scenarios that broke against control planes other than java-control-plane,
 * each run against every control plane the suite has ({@link ControlPlaneKind}: java-control-plane
 * itself, models of istiod and go-control-plane written from their source) with the proxy's
 * upstream speaking SotW and Delta. Short scenarios run in every cell; long ones in one cell per
 * control plane, the upstream variant alternating ({@link ControlPlaneCell#representativeCells}).
 * Each ends with invariant 2 checked by {@link ConvergenceChecker}: every client holds what the
 * control plane serves for what it subscribed to, and ACKed it.
 */
class ControlPlaneMatrixTest {

  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final Backoff QUICK =
      new Backoff(Duration.ofMillis(50), Duration.ofMillis(500), 2.0, 0.2);
  private static final String FLEET = "fleet";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private static ProxyConfig config(ControlPlaneCell cell, UpstreamControlPlane controlPlane) {
    return against(cell, controlPlane)
        .withUpstreamBackoff(QUICK)
        .withNotFoundTimeout(Duration.ofSeconds(1));
  }

  private XdsProxy proxy(ControlPlaneCell cell, UpstreamControlPlane controlPlane)
      throws Exception {
    return fixture.proxy(config(cell, controlPlane));
  }

  /**
   * Clusters {@code names}, each an EDS cluster with its assignment; {@code generation} is in the
   * bytes of both, so fleets of different generations differ in every resource.
   */
  static Snapshot fleet(String version, int generation, String... names) {
    List<Cluster> clusters = new ArrayList<>();
    List<ClusterLoadAssignment> endpoints = new ArrayList<>();
    for (String name : names) {
      clusters.add(
          Resources.cluster(name).toBuilder()
              .setConnectTimeout(
                  com.google.protobuf.Duration.newBuilder().setSeconds(1 + generation % 1000))
              .build());
      endpoints.add(Resources.endpoints(name, 1024 + generation % 60000));
    }
    return Snapshot.create(clusters, endpoints, List.of(), List.of(), List.of(), version);
  }

  static String[] clusterNames(int count) {
    return IntStream.range(0, count).mapToObj(i -> "c-" + i).toArray(String[]::new);
  }

  /**
   * A client of {@code variant} in {@code group}: every cluster (wildcard) and the assignments of
   * {@code endpoints}.
   */
  private VariantClient wildcardClient(
      Variant variant, int port, String id, String group, String... endpoints) {
    VariantClient client = fixture.add(new VariantClient(variant, port, node(id, group)));
    client.subscribe(TypeUrl.CLUSTER);
    client.subscribe(TypeUrl.ENDPOINT, endpoints);
    return client;
  }

  /**
   * A client of each variant in the fleet, {@code prefix}-variant, every cluster and the
   * assignments of {@code endpoints}.
   */
  private List<VariantClient> everyVariant(int port, String prefix, String... endpoints) {
    List<VariantClient> clients = new ArrayList<>();
    for (Variant variant : Variant.values()) {
      clients.add(wildcardClient(variant, port, prefix + "-" + variant, FLEET, endpoints));
    }
    return clients;
  }

  /**
   * Invariant 2: every one of {@code clients} holds, and ACKed, what the fleet is served of {@code
   * served}.
   */
  private static void converged(Snapshot served, List<VariantClient> clients) {
    new ConvergenceChecker().upstream(FLEET, served).clients(clients).awaitConverged(WAIT);
  }

  /**
   * A client of {@code variant} in {@code group} that names the clusters and assignments it wants,
   * as gRPC does.
   */
  private VariantClient namedClient(
      Variant variant, int port, String id, String group, String... clusters) {
    VariantClient client = fixture.add(new VariantClient(variant, port, node(id, group)));
    client.subscribe(TypeUrl.CLUSTER, clusters);
    client.subscribe(TypeUrl.ENDPOINT, clusters);
    return client;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.EVERY)
  void aOneClientGroupThatLeavesAndComesBackWithinTheIdleGraceIsServedAgain(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = proxy(cell, controlPlane);
    // A group per client, wildcard and named, SotW and Delta: each group's only client leaves and a
    // new one comes, as an Envoy restarting or a pod rescheduled would.
    List<String> groups = new ArrayList<>();
    for (Variant variant : List.of(Variant.SOTW_ADS, Variant.DELTA_ADS)) {
      for (boolean named : List.of(false, true)) {
        String group = (named ? "named-" : "wildcard-") + variant;
        groups.add(group);
        controlPlane.setSnapshot(group, fleet("1", 1, clusterNames(3)));
      }
    }
    List<VariantClient> first = soloClients(proxy.xdsPort(), "first");
    converged(controlPlane, groups, first);
    first.forEach(VariantClient::close);

    List<VariantClient> second = soloClients(proxy.xdsPort(), "second");

    converged(controlPlane, groups, second);
  }

  /** One client in each of the four one-client groups. */
  private List<VariantClient> soloClients(int port, String prefix) {
    List<VariantClient> clients = new ArrayList<>();
    for (Variant variant : List.of(Variant.SOTW_ADS, Variant.DELTA_ADS)) {
      clients.add(
          wildcardClient(
              variant, port, prefix + "-wildcard-" + variant, "wildcard-" + variant, "c-0", "c-1"));
      clients.add(
          namedClient(
              variant, port, prefix + "-named-" + variant, "named-" + variant, clusterNames(3)));
    }
    return clients;
  }

  private static void converged(
      UpstreamControlPlane controlPlane, List<String> groups, List<VariantClient> clients) {
    ConvergenceChecker checker = new ConvergenceChecker();
    for (String group : groups) {
      checker.upstream(group, fleet("1", 1, clusterNames(3)));
    }
    checker.clients(clients).awaitConverged(WAIT);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.EVERY)
  void whenEveryStreamOfAGroupChurnsAwayTheNewOnesConvergeAndFollowLaterChanges(
      ControlPlaneCell cell) throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = proxy(cell, controlPlane);
    Snapshot before = fleet("1", 1, clusterNames(5));
    controlPlane.setSnapshot(FLEET, before);
    List<VariantClient> leaving = everyVariant(proxy.xdsPort(), "leaving", "c-0", "c-1");
    converged(before, leaving);
    leaving.forEach(VariantClient::close);

    Snapshot during = fleet("2", 2, clusterNames(6));
    controlPlane.setSnapshot(FLEET, during);
    List<VariantClient> arriving = everyVariant(proxy.xdsPort(), "arriving", "c-0", "c-3");
    converged(during, arriving);

    // SotW cannot say an assignment is gone: the assignments subscribed to exist in every fleet.
    Snapshot after = fleet("3", 3, clusterNames(4));
    controlPlane.setSnapshot(FLEET, after);
    converged(after, arriving);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.EVERY)
  void aDoNotCacheResourceReachesAClientThatSubscribesAfterItCame(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    try {
      controlPlane.setDoNotCache(Set.of("c-0"));
    } catch (UnsupportedOperationException cannot) {
      Assumptions.abort(controlPlane.name() + " cannot send do_not_cache");
    }
    XdsProxy proxy = proxy(cell, controlPlane);
    Snapshot served = fleet("1", 1, clusterNames(2));
    controlPlane.setSnapshot(FLEET, served);
    VariantClient early =
        wildcardClient(Variant.SOTW_ADS, proxy.xdsPort(), "early", FLEET, "c-0", "c-1");
    converged(served, List.of(early));

    // Invariant 3: the proxy may not serve c-0 from its store to a later subscriber; it asks the
    // control plane again, with requests this one answers.
    List<VariantClient> late =
        List.of(
            wildcardClient(Variant.SOTW_ADS, proxy.xdsPort(), "late-sotw", FLEET, "c-0", "c-1"),
            wildcardClient(Variant.DELTA_ADS, proxy.xdsPort(), "late-delta", FLEET, "c-0", "c-1"));

    for (VariantClient client : late) {
      await()
          .atMost(WAIT)
          .until(
              () -> {
                client.pump();
                return client.held(TypeUrl.ENDPOINT).keySet().containsAll(List.of("c-0", "c-1"));
              });
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.EVERY)
  void aClientsNackIsNotForwardedAndProvokesNoLoopUpstream(ControlPlaneCell cell) throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = proxy(cell, controlPlane);
    controlPlane.setSnapshot(FLEET, fleet("1", 1, clusterNames(3)));
    VariantClient rejecting =
        wildcardClient(Variant.SOTW_ADS, proxy.xdsPort(), "rejecting", FLEET, "c-0");
    VariantClient accepting =
        wildcardClient(Variant.DELTA_ADS, proxy.xdsPort(), "accepting", FLEET, "c-0");
    converged(fleet("1", 1, clusterNames(3)), List.of(rejecting, accepting));

    rejecting.rejectNext(TypeUrl.CLUSTER);
    Snapshot changed = fleet("2", 2, clusterNames(3));
    controlPlane.setSnapshot(FLEET, changed);
    converged(changed, List.of(accepting));
    await()
        .atMost(WAIT)
        .until(
            () -> {
              rejecting.pump();
              return !rejecting.transcript(TypeUrl.CLUSTER).isEmpty()
                  && rejecting.transcript(TypeUrl.CLUSTER).contains("error_detail");
            });

    // Rule 6: the rejection concerns one client; go- and java-control-plane would resend a NACKed
    // version at once, for ever. Rule 5: every ACK carries its response's version, or they would
    // too.
    long responses = controlPlane.responsesSent();
    await()
        .during(Duration.ofSeconds(1))
        .atMost(Duration.ofSeconds(3))
        .untilAsserted(
            () ->
                assertThat(controlPlane.responsesSent())
                    .as("responses %s sent after every client had its answer", controlPlane.name())
                    .isEqualTo(responses));
    assertThat(controlPlane.requests()).noneMatch(request -> request.hasErrorDetail());
    assertThat(controlPlane.deltaRequests()).noneMatch(request -> request.hasErrorDetail());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void clientsConvergeToTheNewerStateWhenTheControlPlaneRestartsInTheMiddleOfAPush(
      ControlPlaneCell cell) throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = proxy(cell, controlPlane);
    Snapshot small = fleet("1", 1, clusterNames(10));
    controlPlane.setSnapshot(FLEET, small);
    List<VariantClient> clients = everyVariant(proxy.xdsPort(), "pushed", "c-0", "c-1");
    converged(small, clients);

    controlPlane.setSnapshot(FLEET, fleet("2", 2, clusterNames(1000)));
    await()
        .atMost(WAIT)
        .pollInterval(Duration.ofMillis(5))
        .until(
            () -> {
              clients.forEach(VariantClient::pump);
              return clients.stream().anyMatch(client -> client.held(TypeUrl.CLUSTER).size() > 10);
            });
    controlPlane.stop();
    Snapshot newer = fleet("3", 3, clusterNames(800));
    controlPlane.setSnapshot(FLEET, newer);
    controlPlane.start();

    converged(newer, clients);
  }

  /**
   * An Envoy-like client of {@code mode} in the fleet, connected to {@code port}, reconnecting on
   * its own.
   */
  private EnvoyLikeClient envoy(EnvoyLikeClient.Builder mode, String id, int port) {
    return fixture.add(
        mode.nodeId(id)
            .nodeCluster(FLEET)
            .reconnectAfter(Duration.ofMillis(100))
            .start("127.0.0.1:" + port));
  }

  /**
   * {@code fleet} with cluster {@code name}'s definition changed (its connect timeout), its
   * assignment not.
   */
  private static Snapshot withClusterChanged(Snapshot fleet, String version, String name) {
    List<Cluster> clusters = new ArrayList<>(fleet.clusters().resources().values());
    clusters.replaceAll(
        cluster ->
            !cluster.getName().equals(name)
                ? cluster
                : cluster.toBuilder()
                    .setConnectTimeout(
                        com.google.protobuf.Duration.newBuilder()
                            .setSeconds(cluster.getConnectTimeout().getSeconds() + 7))
                    .build());
    return Snapshot.create(
        clusters, fleet.endpoints().resources().values(), List.of(), List.of(), List.of(), version);
  }

  private static void awaitWarm(EnvoyLikeClient envoy, Set<String> clusters) {
    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> {
              assertThat(envoy.activeClusters().keySet())
                  .as("%s: active clusters; transcript:%n%s", envoy, envoy.transcript())
                  .isEqualTo(clusters);
              assertThat(envoy.warmingClusters()).as("%s: warming clusters", envoy).isEmpty();
              assertThat(envoy.initialized()).as("%s: initialized", envoy).isTrue();
            });
  }

  /**
   * The second bug of issue 14: a Cluster changed, its assignment did not. A SotW Envoy asks for
   * the assignment with a request that looks like an ACK, a Delta Envoy asks for nothing; either
   * warms the new cluster only when an assignment comes, which istiod's config lets it wait for for
   * ever.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.EVERY)
  void aClusterChangeReachesAnEnvoyWithItsAssignmentWithinASecond(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = proxy(cell, controlPlane);
    Snapshot before = fleet("1", 1, clusterNames(3));
    controlPlane.setSnapshot(FLEET, before);
    List<EnvoyLikeClient> envoys =
        List.of(
            envoy(EnvoyLikeClient.sotw(), "envoy-sotw", proxy.xdsPort()),
            envoy(EnvoyLikeClient.delta(), "envoy-delta", proxy.xdsPort()));
    envoys.forEach(envoy -> awaitWarm(envoy, Set.of(clusterNames(3))));

    Instant change = Instant.now();
    controlPlane.setSnapshot(FLEET, withClusterChanged(before, "2", "c-1"));

    for (EnvoyLikeClient envoy : envoys) {
      await()
          .atMost(Duration.ofSeconds(1))
          .untilAsserted(
              () ->
                  assertThat(envoy.warmedByAssignmentSince(change, "c-1"))
                      .as(
                          "%s warmed the changed c-1 by an assignment; warmings %s; transcript:%n%s",
                          envoy, envoy.warmings("c-1"), envoy.transcript())
                      .isTrue());
      assertThat(envoy.hosts("c-1")).as("%s: c-1's hosts", envoy).isNotEmpty();
      assertThat(envoy.modelErrors()).isEmpty();
    }
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void envoysReconnectingToARestartedProxyGetWhatChangedMeanwhileAndWarmIt(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy first = XdsProxy.start(config(cell, controlPlane));
    int port = first.xdsPort();
    Snapshot before = fleet("1", 1, "c-0", "c-1", "c-2");
    controlPlane.setSnapshot(FLEET, before);
    List<EnvoyLikeClient> envoys;
    try {
      envoys =
          List.of(
              envoy(EnvoyLikeClient.sotw(), "envoy-sotw", port),
              envoy(EnvoyLikeClient.delta(), "envoy-delta", port));
      envoys.forEach(envoy -> awaitWarm(envoy, Set.of("c-0", "c-1", "c-2")));
    } finally {
      first.close();
    }

    // While the proxy is away: c-1's definition changes, c-2 goes, c-3 comes.
    Snapshot changed = withClusterChanged(before, "2", "c-1");
    List<Cluster> clusters = new ArrayList<>(changed.clusters().resources().values());
    clusters.removeIf(cluster -> cluster.getName().equals("c-2"));
    Snapshot c3 = fleet("2", 1, "c-3");
    clusters.addAll(c3.clusters().resources().values());
    List<ClusterLoadAssignment> endpoints =
        new ArrayList<>(changed.endpoints().resources().values());
    endpoints.removeIf(assignment -> assignment.getClusterName().equals("c-2"));
    endpoints.addAll(c3.endpoints().resources().values());
    Instant change = Instant.now();
    controlPlane.setSnapshot(
        FLEET, Snapshot.create(clusters, endpoints, List.of(), List.of(), List.of(), "2"));
    fixture.proxy(config(cell, controlPlane).withPorts(port, 0, 0));

    for (EnvoyLikeClient envoy : envoys) {
      awaitWarm(envoy, Set.of("c-0", "c-1", "c-3"));
      assertThat(envoy.warmedByAssignmentSince(change, "c-1"))
          .as("%s: c-1 warmed by its assignment; %s", envoy, envoy.warmings("c-1"))
          .isTrue();
      assertThat(envoy.warmedByAssignmentSince(change, "c-3"))
          .as("%s: c-3 warmed by its assignment; %s", envoy, envoy.warmings("c-3"))
          .isTrue();
      assertThat(envoy.modelErrors()).isEmpty();
    }
  }

  /**
   * Rule 21: an Envoy starting with a cluster whose assignment the control plane does not have
   * warms that cluster with no hosts once the not-found timeout says so, and starts its listeners,
   * instead of waiting for ever (istiod's config sets no initial_fetch_timeout). java-control-plane
   * answers no request naming a missing assignment at all, so there every cluster of the group
   * warms with no hosts; a directly connected Envoy would not start.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.EVERY)
  void anEnvoyWhoseClusterHasNoAssignmentUpstreamStillStarts(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    XdsProxy proxy = proxy(cell, controlPlane);
    Snapshot full = fleet("1", 1, clusterNames(3));
    List<ClusterLoadAssignment> endpoints = new ArrayList<>(full.endpoints().resources().values());
    endpoints.removeIf(assignment -> assignment.getClusterName().equals("c-2"));
    controlPlane.setSnapshot(
        FLEET,
        Snapshot.create(
            full.clusters().resources().values(), endpoints, List.of(), List.of(), List.of(), "1"));

    List<EnvoyLikeClient> envoys =
        List.of(
            envoy(EnvoyLikeClient.sotw(), "envoy-sotw", proxy.xdsPort()),
            envoy(EnvoyLikeClient.delta(), "envoy-delta", proxy.xdsPort()));

    for (EnvoyLikeClient envoy : envoys) {
      awaitWarm(envoy, Set.of(clusterNames(3)));
      assertThat(envoy.hosts("c-2")).as("%s: c-2 has no assignment upstream", envoy).isEmpty();
      if (cell.controlPlane() != ControlPlaneKind.JAVA_CONTROL_PLANE) {
        assertThat(envoy.hosts("c-0")).as("%s: c-0's hosts", envoy).isNotEmpty();
      }
      assertThat(envoy.modelErrors()).isEmpty();
    }
  }
}
