package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.xdsproxy.core.ClientFeatures;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource.UpstreamSession;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One node group's incremental ADS session against java-control-plane's DeltaAggregatedResources.
 */
class DeltaUpstreamSessionTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Backoff FAST =
      new Backoff(Duration.ofMillis(50), Duration.ofMillis(200), 2.0, 0.2);

  /** Whom the group was opened by: the tenant its streams start as. */
  private static final String TENANT = "address 192.0.2.1";

  private static final Node NODE =
      Node.newBuilder().setId("first-client").setCluster("fleet").build();

  /**
   * The node the upstream sees: the group's first client's, announcing what the proxy reads (TTLs,
   * wrapped resources).
   */
  private static final Node ANNOUNCED =
      NODE.toBuilder()
          .addClientFeatures(ClientFeatures.SUPPORTS_TTL)
          .addClientFeatures(ClientFeatures.SUPPORTS_RESOURCE_IN_SOTW)
          .build();

  private final ExecutorService pool = Executors.newFixedThreadPool(2);
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
  private final List<ResourceUpdate> updates = new CopyOnWriteArrayList<>();
  private ControlPlane controlPlane;
  private AdsUpstream upstream;
  private UpstreamSession session;

  @BeforeEach
  void start() throws Exception {
    controlPlane = new ControlPlane();
    upstream =
        new AdsUpstream(
            AdsUpstream.Settings.plaintext(
                java.util.List.of(controlPlane.target()), AdsUpstream.Protocol.DELTA, FAST, WAIT),
            pool,
            timer,
            new SimpleMeterRegistry());
    session = upstream.open(new NodeGroupKey("fleet"), NODE, TENANT, updates::add);
  }

  @AfterEach
  void stop() {
    upstream.close();
    controlPlane.close();
    timer.shutdownNow();
    pool.shutdownNow();
  }

  private void publish(String version, String... names) {
    List<Cluster> clusters =
        Arrays.stream(names)
            .map(
                name ->
                    Cluster.newBuilder().setName(name).setType(Cluster.DiscoveryType.EDS).build())
            .toList();
    List<ClusterLoadAssignment> endpoints =
        Arrays.stream(names)
            .map(name -> ClusterLoadAssignment.newBuilder().setClusterName(name).build())
            .toList();
    controlPlane.setSnapshot(
        "fleet", Snapshot.create(clusters, endpoints, List.of(), List.of(), List.of(), version));
  }

  private List<ResourceUpdate> updatesOf(TypeUrl type) {
    return updates.stream().filter(u -> u.type().equals(type)).toList();
  }

  private List<String> namesSent(TypeUrl type) {
    return updatesOf(type).stream()
        .flatMap(u -> u.resources().stream())
        .map(XdsResource::name)
        .distinct()
        .sorted()
        .toList();
  }

  private List<DeltaDiscoveryRequest> requestsOf(TypeUrl type) {
    return controlPlane.deltaRequests().stream()
        .filter(r -> r.getTypeUrl().equals(type.url()))
        .toList();
  }

  @Test
  void aWildcardGetsEveryResourceWithTheUpstreamsVersionsAndIsAcked() {
    publish("1", "a", "b");

    session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));

    await().atMost(WAIT).until(() -> namesSent(TypeUrl.CLUSTER).equals(List.of("a", "b")));
    ResourceUpdate update = updatesOf(TypeUrl.CLUSTER).get(0);
    assertThat(update.complete()).as("a wildcard answer covers every name").isTrue();
    assertThat(update.resources())
        .allSatisfy(resource -> assertThat(resource.version()).isNotEmpty());
    await().atMost(WAIT).until(() -> requestsOf(TypeUrl.CLUSTER).size() >= 2);
    DeltaDiscoveryRequest first = requestsOf(TypeUrl.CLUSTER).get(0);
    assertThat(first.getResourceNamesSubscribeList()).as("a legacy wildcard").isEmpty();
    assertThat(first.getNode()).isEqualTo(ANNOUNCED);
    assertThat(requestsOf(TypeUrl.CLUSTER).get(1).getResponseNonce()).isNotEmpty();
  }

  @Test
  void aDeletedResourceArrivesAsARemoval() {
    publish("1", "a", "b");
    session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));
    await().atMost(WAIT).until(() -> namesSent(TypeUrl.CLUSTER).equals(List.of("a", "b")));

    publish("2", "a");

    await()
        .atMost(WAIT)
        .until(() -> updatesOf(TypeUrl.CLUSTER).stream().anyMatch(u -> u.removed().contains("b")));
  }

  @Test
  void namesAreSubscribedAndUnsubscribedAsTheGroupsInterestChanges() {
    publish("1", "a", "b");
    session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a")));
    await().atMost(WAIT).until(() -> namesSent(TypeUrl.ENDPOINT).equals(List.of("a")));

    session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "b")));
    await().atMost(WAIT).until(() -> namesSent(TypeUrl.ENDPOINT).equals(List.of("a", "b")));

    session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("b")));
    await()
        .atMost(WAIT)
        .until(
            () -> updatesOf(TypeUrl.ENDPOINT).stream().anyMatch(u -> u.forgotten().contains("a")));

    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(requestsOf(TypeUrl.ENDPOINT))
                    .anySatisfy(
                        r -> assertThat(r.getResourceNamesSubscribeList()).containsExactly("b"))
                    .anySatisfy(
                        r -> assertThat(r.getResourceNamesUnsubscribeList()).containsExactly("a")));
  }

  @Test
  void onReconnectTheVersionsHeldAreSentAsInitialResourceVersions() throws Exception {
    publish("1", "a", "b");
    session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "b")));
    await().atMost(WAIT).until(() -> namesSent(TypeUrl.ENDPOINT).equals(List.of("a", "b")));
    String versionOfA =
        updatesOf(TypeUrl.ENDPOINT).stream()
            .flatMap(u -> u.resources().stream())
            .filter(r -> r.name().equals("a"))
            .findFirst()
            .orElseThrow()
            .version();

    controlPlane.stop();
    int before = controlPlane.deltaRequests().size();
    controlPlane.start();

    await().atMost(WAIT).until(() -> controlPlane.deltaRequests().size() > before);
    DeltaDiscoveryRequest again = controlPlane.deltaRequests().get(before);
    assertThat(again.getResourceNamesSubscribeList()).containsExactly("a", "b");
    assertThat(again.getInitialResourceVersionsMap())
        .containsEntry("a", versionOfA)
        .containsKey("b");
  }

  @Test
  void aDoNotCacheCopyIsAskedForAgainByUnsubscribingAndSubscribingInTwoRequests() throws Exception {
    try (ScriptedControlPlane scripted = new ScriptedControlPlane()) {
      AdsUpstream toScripted =
          new AdsUpstream(
              AdsUpstream.Settings.plaintext(
                  List.of(scripted.target()), AdsUpstream.Protocol.DELTA, FAST, WAIT),
              pool,
              timer,
              new SimpleMeterRegistry());
      try {
        UpstreamSession named =
            toScripted.open(new NodeGroupKey("other"), NODE, TENANT, updates::add);
        named.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a")));
        scripted.nextDeltaRequest(WAIT);
        Resource.Builder uncacheable =
            Resource.newBuilder()
                .setName("a")
                .setVersion("1")
                .setResource(
                    Any.pack(ClusterLoadAssignment.newBuilder().setClusterName("a").build()));
        uncacheable.getCacheControlBuilder().setDoNotCache(true);
        scripted.send(
            DeltaDiscoveryResponse.newBuilder()
                .setTypeUrl(TypeUrl.ENDPOINT.url())
                .setNonce("n1")
                .addResources(uncacheable)
                .build());
        scripted.nextDeltaRequest(WAIT);

        named.refetch(TypeUrl.ENDPOINT);

        // istiod and go-control-plane ignore a subscription to a name already subscribed, and end
        // up unsubscribed from a name one request both subscribes and unsubscribes (rule 14).
        DeltaDiscoveryRequest unsubscribe = scripted.nextDeltaRequest(WAIT);
        DeltaDiscoveryRequest subscribe = scripted.nextDeltaRequest(WAIT);
        assertThat(unsubscribe.getResourceNamesUnsubscribeList()).containsExactly("a");
        assertThat(unsubscribe.getResourceNamesSubscribeList()).isEmpty();
        assertThat(subscribe.getResourceNamesSubscribeList()).containsExactly("a");
        assertThat(subscribe.getResourceNamesUnsubscribeList()).isEmpty();
        // A removal answering the unsubscription says nothing of whether "a" exists.
        scripted.send(
            DeltaDiscoveryResponse.newBuilder()
                .setTypeUrl(TypeUrl.ENDPOINT.url())
                .setNonce("n2")
                .addRemovedResources("a")
                .build());
        scripted.send(
            DeltaDiscoveryResponse.newBuilder()
                .setTypeUrl(TypeUrl.ENDPOINT.url())
                .setNonce("n3")
                .addResources(uncacheable)
                .build());
        await().atMost(WAIT).until(() -> updatesOf(TypeUrl.ENDPOINT).size() >= 3);
        assertThat(updatesOf(TypeUrl.ENDPOINT))
            .allSatisfy(update -> assertThat(update.removed()).isEmpty());
      } finally {
        toScripted.close();
      }
    }
  }
}
