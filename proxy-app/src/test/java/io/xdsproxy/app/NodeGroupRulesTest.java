package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
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

/** Node groups made by a configured rule, and the node the upstream sees for a group. */
class NodeGroupRulesTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    // Grouped by the namespace in an Istio-style node id; the upstream sees one node per namespace.
    proxy =
        fixture.proxy(
            against(controlPlane.target())
                .withNodeGroupKey(List.of("id:^[^~]*~[^~]*~[^.~]*\\.([^~]+)~"))
                .withUpstreamNodeId("xds-proxy~{group}"));
    controlPlane.setSnapshot(
        "reviews",
        Snapshot.create(
            List.of(Resources.cluster("reviews")),
            List.of(),
            List.of(),
            List.of(),
            List.of(),
            "1"));
  }

  private static Node sidecar(String pod, String cluster) {
    return Node.newBuilder()
        .setId("sidecar~10.0.0.1~" + pod + "~svc.cluster.local")
        .setCluster(cluster)
        .build();
  }

  private static DiscoveryRequest clusters(Node node) {
    return DiscoveryRequest.newBuilder().setNode(node).setTypeUrl(TypeUrl.CLUSTER.url()).build();
  }

  @Test
  void clientsWhoseIdsNameOneNamespaceShareOneUpstreamNodeNamedByTheTemplate() {
    try (var first = XdsTestClient.sotwAds(proxy.xdsPort());
        var second = XdsTestClient.sotwAds(proxy.xdsPort())) {
      first.send(clusters(sidecar("reviews-v1-abc.bookinfo", "reviews")));
      second.send(clusters(sidecar("reviews-v2-def.bookinfo", "reviews")));

      assertThat(first.next(WAIT).getResourcesCount()).isEqualTo(1);
      assertThat(second.next(WAIT).getResourcesCount()).isEqualTo(1);
      assertThat(controlPlane.streamGroups()).hasSize(1);
      assertThat(controlPlane.requests())
          .allSatisfy(
              request -> assertThat(request.getNode().getId()).isEqualTo("xds-proxy~bookinfo"));
    }
  }

  @Test
  void aClientWhoseIdTheRuleCannotReadIsRefusedWithFailedPrecondition() {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(clusters(Node.newBuilder().setId("not-istio").setCluster("reviews").build()));

      io.grpc.Status status = client.awaitEnd(WAIT);

      assertThat(status.getCode()).isEqualTo(Code.FAILED_PRECONDITION);
      assertThat(status.getDescription()).contains("'not-istio'").contains("does not match");
    }
  }

  @Test
  void anotherNamespaceIsAnotherGroupWithItsOwnUpstreamStream() {
    try (var first = XdsTestClient.sotwAds(proxy.xdsPort());
        var other = XdsTestClient.sotwAds(proxy.xdsPort())) {
      first.send(clusters(sidecar("reviews-v1-abc.bookinfo", "reviews")));
      other.send(clusters(sidecar("reviews-v1-abc.staging", "reviews")));

      first.next(WAIT);
      other.next(WAIT);
      await().atMost(WAIT).until(() -> controlPlane.streamGroups().size() == 2);
    }
  }
}
