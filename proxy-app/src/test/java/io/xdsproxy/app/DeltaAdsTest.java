package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.rpc.Status;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.cluster.v3.ClusterDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.Status.Code;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The rules of "Incremental xDS" on the proxy's DeltaAggregatedResources, fed by a
 * State-of-the-World upstream (java-control-plane): the proxy turns full states into per-resource
 * deltas.
 */
class DeltaAdsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration QUIET = Duration.ofMillis(700);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;
  private XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> client;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    proxy =
        fixture.proxy(against(controlPlane.target()).withNotFoundTimeout(Duration.ofMillis(300)));
    client = fixture.deltaAds();
  }

  /** Clusters named {@code clusters} (connect timeout {@code timeout} s), and their endpoints. */
  private void publish(String version, int timeout, String... clusters) {
    List<Cluster> cds =
        Arrays.stream(clusters)
            .map(
                name ->
                    Resources.cluster(name).toBuilder()
                        .setConnectTimeout(
                            com.google.protobuf.Duration.newBuilder().setSeconds(timeout))
                        .build())
            .toList();
    List<ClusterLoadAssignment> eds =
        Arrays.stream(clusters).map(name -> Resources.endpoints(name, 1000)).toList();
    controlPlane.setSnapshot(
        "fleet", Snapshot.create(cds, eds, List.of(), List.of(), List.of(), version));
  }

  private static DeltaDiscoveryRequest.Builder clusters() {
    return DeltaDiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url());
  }

  private static DeltaDiscoveryRequest ack(DeltaDiscoveryResponse response) {
    return DeltaDiscoveryRequest.newBuilder()
        .setTypeUrl(response.getTypeUrl())
        .setResponseNonce(response.getNonce())
        .build();
  }

  private static List<String> names(DeltaDiscoveryResponse response) {
    return response.getResourcesList().stream().map(Resource::getName).sorted().toList();
  }

  @Test
  void aWildcardGetsEveryResourceThenOnlyWhatChangedThenRemovalsByName() {
    publish("1", 1, "a", "b", "c");
    client.send(clusters().setNode(node("n1", "fleet")).build());
    DeltaDiscoveryResponse first = client.next(WAIT);
    assertThat(names(first)).containsExactly("a", "b", "c");
    assertThat(first.getResourcesList())
        .allSatisfy(resource -> assertThat(resource.getVersion()).isNotEmpty());
    client.send(ack(first));
    // The ACK handled before the update comes: one that races it is answered with the update's
    // additions and removals of this one type in one response (ClientStream.send).
    await()
        .atMost(WAIT)
        .until(
            () ->
                fixture
                    .scrape()
                    .contains(
                        "xds_downstream_acks_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0"));

    publish("2", 1, "a", "b2", "c");
    DeltaDiscoveryResponse made = client.next(WAIT);
    DeltaDiscoveryResponse broken = client.next(WAIT);

    assertThat(names(made)).containsExactly("b2");
    assertThat(made.getRemovedResourcesList()).as("removals come after additions").isEmpty();
    assertThat(broken.getResourcesList()).isEmpty();
    assertThat(broken.getRemovedResourcesList()).containsExactly("b");
  }

  @Test
  void aResourceThatIsOnlyRemovedIsRemovedInOneResponse() {
    publish("1", 1, "a", "b");
    client.send(clusters().setNode(node("n1", "fleet")).build());
    client.send(ack(client.next(WAIT)));

    publish("2", 1, "a");

    DeltaDiscoveryResponse removal = client.next(WAIT);
    assertThat(removal.getResourcesList()).isEmpty();
    assertThat(removal.getRemovedResourcesList()).containsExactly("b");
    client.expectNoResponse(QUIET);
  }

  @Test
  void aChangedResourceIsSentAloneWithItsNewVersion() {
    publish("1", 1, "a", "b");
    client.send(clusters().setNode(node("n1", "fleet")).build());
    DeltaDiscoveryResponse first = client.next(WAIT);
    client.send(ack(first));

    publish("2", 2, "a", "b");
    publish("3", 2, "a", "b");
    DeltaDiscoveryResponse second = client.next(WAIT);

    assertThat(names(second)).containsExactly("a", "b");
    assertThat(second.getResources(0).getVersion())
        .isNotEqualTo(first.getResources(0).getVersion());
    client.send(ack(second));
    client.expectNoResponse(QUIET);
  }

  @Test
  void unsubscribingGetsNoResponseAndPhantomUnsubscribesAreIgnored() {
    publish("1", 1, "a", "b");
    client.send(
        clusters()
            .setNode(node("n1", "fleet"))
            .addResourceNamesSubscribe("a")
            .addResourceNamesSubscribe("b")
            .build());
    DeltaDiscoveryResponse first = client.next(WAIT);
    assertThat(names(first)).containsExactly("a", "b");

    client.send(
        ack(first).toBuilder()
            .addResourceNamesUnsubscribe("b")
            .addResourceNamesUnsubscribe("never-subscribed")
            .build());

    client.expectNoResponse(QUIET);
    publish("2", 2, "a", "b");
    assertThat(names(client.next(WAIT))).as("b is no longer subscribed").containsExactly("a");
  }

  @Test
  void aNameSubscribedAgainIsResentEvenThoughItDidNotChange() {
    publish("1", 1, "a");
    client.send(clusters().setNode(node("n1", "fleet")).addResourceNamesSubscribe("a").build());
    DeltaDiscoveryResponse first = client.next(WAIT);
    client.send(ack(first));

    client.send(clusters().addResourceNamesSubscribe("a").build());

    assertThat(names(client.next(WAIT))).containsExactly("a");
  }

  @Test
  void aSubscribedNameTheUpstreamDoesNotHaveIsReportedRemovedAfterTheNotFoundTimeout() {
    publish("1", 1, "a");
    client.send(clusters().setNode(node("n1", "fleet")).addResourceNamesSubscribe("ghost").build());

    DeltaDiscoveryResponse response = client.next(WAIT);

    assertThat(response.getResourcesList()).isEmpty();
    assertThat(response.getRemovedResourcesList()).containsExactly("ghost");
  }

  @Test
  void aSubscribedNameIsReportedRemovedAtOnceWhenAWildcardUpstreamAnswerShowsItMissing() {
    publish("1", 1, "a");
    try (var wildcard = XdsTestClient.deltaAds(proxy.xdsPort())) {
      wildcard.send(clusters().setNode(node("n2", "fleet")).build());
      assertThat(names(wildcard.next(WAIT))).containsExactly("a");

      client.send(
          clusters()
              .setNode(node("n1", "fleet"))
              .addResourceNamesSubscribe("a")
              .addResourceNamesSubscribe("ghost")
              .build());
      DeltaDiscoveryResponse response = client.next(WAIT);

      // In the same response as a: known absent from the wildcard answer, not from a timer.
      assertThat(names(response)).containsExactly("a");
      assertThat(response.getRemovedResourcesList()).containsExactly("ghost");
    }
  }

  @Test
  void unsubscribingANameAlsoCoveredByTheWildcardResendsIt() {
    publish("1", 1, "a", "b");
    client.send(
        clusters()
            .setNode(node("n1", "fleet"))
            .addResourceNamesSubscribe("*")
            .addResourceNamesSubscribe("a")
            .build());
    DeltaDiscoveryResponse first = client.next(WAIT);
    assertThat(names(first)).containsExactly("a", "b");
    client.send(ack(first));

    client.send(clusters().addResourceNamesUnsubscribe("a").build());

    DeltaDiscoveryResponse answer = client.next(WAIT);
    assertThat(names(answer))
        .as("a is still in the wildcard: the client must keep it")
        .containsExactly("a");
    assertThat(answer.getRemovedResourcesList()).isEmpty();
  }

  @Test
  void onReconnectEqualInitialVersionsAreNotResentAndTheRestIs() {
    publish("1", 1, "a", "b");
    client.send(clusters().setNode(node("n1", "fleet")).build());
    DeltaDiscoveryResponse first = client.next(WAIT);
    Map<String, String> held =
        Map.of(
            "a", first.getResources(0).getVersion(),
            "b", "some-old-version",
            "gone", "v0");

    try (var reconnected = XdsTestClient.deltaAds(proxy.xdsPort())) {
      reconnected.send(
          clusters()
              .setNode(node("n1", "fleet"))
              .addResourceNamesSubscribe("*")
              .putAllInitialResourceVersions(held)
              .build());
      DeltaDiscoveryResponse answer = reconnected.next(WAIT);

      assertThat(names(answer)).containsExactly("b");
      assertThat(answer.getRemovedResourcesList()).containsExactly("gone");
    }
  }

  @Test
  void aNackedVersionIsNotResentButTheNextVersionIs() {
    publish("1", 1, "a");
    client.send(clusters().setNode(node("n1", "fleet")).build());
    DeltaDiscoveryResponse rejected = client.next(WAIT);

    client.send(
        ack(rejected).toBuilder()
            .setErrorDetail(Status.newBuilder().setCode(3).setMessage("a is bad"))
            .build());
    client.expectNoResponse(QUIET);

    publish("2", 2, "a");
    assertThat(names(client.next(WAIT))).containsExactly("a");
  }

  @Test
  void aSubscriptionChangeWithAStaleNonceIsStillHonoured() {
    publish("1", 1, "a", "b");
    client.send(clusters().setNode(node("n1", "fleet")).addResourceNamesSubscribe("a").build());
    DeltaDiscoveryResponse first = client.next(WAIT);

    client.send(
        clusters().setResponseNonce("stale-or-unknown").addResourceNamesSubscribe("b").build());

    assertThat(names(client.next(WAIT))).containsExactly("b");
    assertThat(first.getNonce()).isNotEqualTo("stale-or-unknown");
  }

  @Test
  void aNodeChangedMidStreamIsRefused() {
    publish("1", 1, "a");
    client.send(clusters().setNode(node("n1", "fleet")).build());
    client.next(WAIT);

    client.send(clusters().setNode(node("n2", "fleet")).build());

    io.grpc.Status status = client.awaitEnd(WAIT);
    assertThat(status.getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).contains("'n1'").contains("'n2'");
  }

  @Test
  void thePerTypeClusterServiceServesDeltaAndRefusesAnotherType() {
    publish("1", 1, "a");
    try (var cds =
            new XdsTestClient<>(
                proxy.xdsPort(), ClusterDiscoveryServiceGrpc.getDeltaClustersMethod());
        var wrong =
            new XdsTestClient<>(
                proxy.xdsPort(), ClusterDiscoveryServiceGrpc.getDeltaClustersMethod())) {
      cds.send(DeltaDiscoveryRequest.newBuilder().setNode(node("n1", "fleet")).build());
      DeltaDiscoveryResponse response = cds.next(WAIT);
      assertThat(response.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
      assertThat(names(response)).containsExactly("a");

      wrong.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("n2", "fleet"))
              .setTypeUrl(TypeUrl.LISTENER.url())
              .build());
      io.grpc.Status status = wrong.awaitEnd(WAIT);
      assertThat(status.getCode()).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(status.getDescription()).contains(TypeUrl.LISTENER.url()).contains("Cluster");
    }
  }
}
