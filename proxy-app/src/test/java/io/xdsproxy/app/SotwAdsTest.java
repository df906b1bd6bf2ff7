package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.Status;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Status.Code;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The SotW ADS rules issue 2 needs, through a real control plane and a raw ADS client. */
class SotwAdsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  /** How long "nothing arrives" is watched for; the proxy answers in milliseconds when it does. */
  private static final Duration QUIET = Duration.ofMillis(700);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;
  private XdsTestClient<DiscoveryRequest, DiscoveryResponse> client;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    proxy = fixture.proxy(against(controlPlane.target()));
    client = fixture.sotwAds();
  }

  /** Clusters named {@code clusters}, and endpoints for each on {@code port}. */
  private void publish(String version, int port, String... clusters) {
    controlPlane.setSnapshot("fleet", Resources.clustersAt(port, version, clusters));
  }

  private static DiscoveryRequest.Builder request(TypeUrl type, String... names) {
    return DiscoveryRequest.newBuilder().setTypeUrl(type.url()).addAllResourceNames(List.of(names));
  }

  private static DiscoveryRequest ack(DiscoveryResponse response, String... names) {
    return request(TypeUrl.parse(response.getTypeUrl()), names)
        .setVersionInfo(response.getVersionInfo())
        .setResponseNonce(response.getNonce())
        .build();
  }

  private static List<String> names(DiscoveryResponse response)
      throws InvalidProtocolBufferException {
    java.util.ArrayList<String> names = new java.util.ArrayList<>();
    for (Any any : response.getResourcesList()) {
      names.add(
          any.is(Cluster.class)
              ? any.unpack(Cluster.class).getName()
              : any.unpack(ClusterLoadAssignment.class).getClusterName());
    }
    return names;
  }

  @Test
  void wildcardClustersGetTheFullStateAgainWhenOneClusterChanges() throws Exception {
    publish("1", 1000, "a", "b");
    client.send(request(TypeUrl.CLUSTER).setNode(node("n1", "fleet")).build());
    DiscoveryResponse first = client.next(WAIT);
    assertThat(names(first)).containsExactlyInAnyOrder("a", "b");
    client.send(ack(first));

    publish("2", 1000, "a", "c");
    DiscoveryResponse made = client.next(WAIT);
    DiscoveryResponse broken = client.next(WAIT);

    assertThat(names(made))
        .as("make before break: c added, b not yet taken away")
        .containsExactlyInAnyOrder("a", "b", "c");
    assertThat(names(broken))
        .as("full state: b deleted by absence, a resent")
        .containsExactlyInAnyOrder("a", "c");
    assertThat(List.of(first.getVersionInfo(), made.getVersionInfo(), broken.getVersionInfo()))
        .doesNotHaveDuplicates();
    assertThat(List.of(first.getNonce(), made.getNonce(), broken.getNonce()))
        .doesNotHaveDuplicates();
  }

  @Test
  void aClusterThatIsOnlyRemovedIsRemovedInOneResponse() throws Exception {
    publish("1", 1000, "a", "b");
    client.send(request(TypeUrl.CLUSTER).setNode(node("n1", "fleet")).build());
    client.send(ack(client.next(WAIT)));

    publish("2", 1000, "a");

    assertThat(names(client.next(WAIT))).containsExactly("a");
    client.expectNoResponse(QUIET);
  }

  @Test
  void anEmptyListAfterNamesUnsubscribesEverythingRatherThanBeingAWildcard() throws Exception {
    publish("1", 1000, "a", "b");
    client.send(request(TypeUrl.CLUSTER, "a").setNode(node("n1", "fleet")).build());
    DiscoveryResponse first = client.next(WAIT);
    assertThat(names(first)).containsExactly("a");

    client.send(ack(first));

    client.expectNoResponse(QUIET);
    publish("2", 1000, "a", "b", "c");
    client.expectNoResponse(QUIET);
  }

  @Test
  void aNameAlsoCoveredByTheWildcardIsSentOnce() throws Exception {
    publish("1", 1000, "a", "b");

    client.send(request(TypeUrl.CLUSTER, "*", "a").setNode(node("n1", "fleet")).build());

    assertThat(names(client.next(WAIT)))
        .as("duplicate names are never sent")
        .containsExactlyInAnyOrder("a", "b");
  }

  @Test
  void namedEndpointsGetOnlyTheResourcesThatChanged() throws Exception {
    publish("1", 1000, "a", "b");
    client.send(request(TypeUrl.ENDPOINT, "a", "b").setNode(node("n1", "fleet")).build());
    DiscoveryResponse first = client.next(WAIT);
    assertThat(names(first)).containsExactlyInAnyOrder("a", "b");
    client.send(ack(first, "a", "b"));

    controlPlane.setSnapshot(
        "fleet",
        Snapshot.create(
            List.of(Resources.cluster("a"), Resources.cluster("b")),
            List.of(Resources.endpoints("a", 1000), Resources.endpoints("b", 2000)),
            List.of(),
            List.of(),
            List.of(),
            "2"));
    DiscoveryResponse second = client.next(WAIT);

    assertThat(names(second)).containsExactly("b");
  }

  @Test
  void aNewlyAddedNameIsSentEvenThoughItDidNotChange() throws Exception {
    publish("1", 1000, "a", "b");
    try (var other = XdsTestClient.sotwAds(proxy.xdsPort())) {
      // Another client of the group has b cached in the proxy's store already.
      other.send(request(TypeUrl.ENDPOINT, "a", "b").setNode(node("n2", "fleet")).build());
      assertThat(names(other.next(WAIT))).containsExactlyInAnyOrder("a", "b");
      client.send(request(TypeUrl.ENDPOINT, "a").setNode(node("n1", "fleet")).build());
      DiscoveryResponse first = client.next(WAIT);
      assertThat(names(first)).containsExactly("a");
      client.send(ack(first, "a"));

      client.send(ack(first, "a", "b"));

      assertThat(names(client.next(WAIT))).containsExactly("b");
    }
  }

  @Test
  void noResponseWhenTheUpstreamRepublishesTheSameContent() throws Exception {
    publish("1", 1000, "a");
    client.send(request(TypeUrl.CLUSTER).setNode(node("n1", "fleet")).build());
    client.send(ack(client.next(WAIT)));

    publish("2", 1000, "a");

    client.expectNoResponse(QUIET);
  }

  @Test
  void aNackedVersionIsNotResentButTheNextVersionIs() throws Exception {
    publish("1", 1000, "a");
    client.send(request(TypeUrl.CLUSTER).setNode(node("n1", "fleet")).build());
    DiscoveryResponse rejected = client.next(WAIT);

    client.send(
        request(TypeUrl.CLUSTER)
            .setResponseNonce(rejected.getNonce())
            .setErrorDetail(Status.newBuilder().setCode(3).setMessage("cluster a is invalid"))
            .build());
    client.expectNoResponse(QUIET);

    publish("2", 1000, "a", "b");
    DiscoveryResponse next = client.next(WAIT);
    assertThat(names(next)).containsExactlyInAnyOrder("a", "b");
  }

  @Test
  void aRequestWithAStaleNonceIsIgnored() throws Exception {
    publish("1", 1000, "a", "b");
    client.send(request(TypeUrl.ENDPOINT, "a").setNode(node("n1", "fleet")).build());
    DiscoveryResponse first = client.next(WAIT);
    client.send(ack(first, "a"));
    controlPlane.setSnapshot(
        "fleet",
        Snapshot.create(
            List.of(Resources.cluster("a"), Resources.cluster("b")),
            List.of(Resources.endpoints("a", 2000), Resources.endpoints("b", 1000)),
            List.of(),
            List.of(),
            List.of(),
            "2"));
    DiscoveryResponse second = client.next(WAIT);

    client.send(ack(first, "a", "b"));

    client.expectNoResponse(QUIET);
    client.send(ack(second, "a", "b"));
    assertThat(names(client.next(WAIT))).containsExactly("b");
  }

  @Test
  void theFirstRequestWithoutANodeIsRefused() {
    client.send(request(TypeUrl.CLUSTER).build());

    io.grpc.Status status = client.awaitEnd(WAIT);

    assertThat(status.getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).contains("must carry the node");
  }

  @Test
  void aNodeThatChangesMidStreamIsRefusedNamingBothNodes() {
    publish("1", 1000, "a");
    client.send(request(TypeUrl.CLUSTER).setNode(node("n1", "fleet")).build());
    client.next(WAIT);

    client.send(request(TypeUrl.ENDPOINT, "a").setNode(node("n2", "fleet")).build());

    io.grpc.Status status = client.awaitEnd(WAIT);
    assertThat(status.getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).contains("'n1'").contains("'n2'");
  }

  @Test
  void aNodeWithoutAClusterCannotBeGroupedAndIsRefused() {
    client.send(request(TypeUrl.CLUSTER).setNode(node("lonely", "")).build());

    io.grpc.Status status = client.awaitEnd(WAIT);

    assertThat(status.getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(status.getDescription()).contains("lonely").contains("node.cluster");
  }

  @Test
  void aMalformedTypeUrlIsRefusedAndOtherClientsAreNotDisturbed() throws Exception {
    publish("1", 1000, "a");
    try (var other = XdsTestClient.sotwAds(proxy.xdsPort())) {
      other.send(request(TypeUrl.CLUSTER).setNode(node("n2", "fleet")).build());
      other.send(ack(other.next(WAIT)));

      client.send(
          DiscoveryRequest.newBuilder().setNode(node("n1", "fleet")).setTypeUrl("garbage").build());
      assertThat(client.awaitEnd(WAIT).getCode()).isEqualTo(Code.INVALID_ARGUMENT);

      publish("2", 1000, "a", "b");
      assertThat(names(other.next(WAIT))).containsExactlyInAnyOrder("a", "b");
    }
  }
}
