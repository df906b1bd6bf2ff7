package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.app.testing.Backend;
import io.xdsproxy.app.testing.ControlPlaneCell;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsClientChannel;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The first real path: a control plane → xds-proxy → grpc-java's xDS client → a gRPC server. */
class ControlPlaneThroughProxyTest {

  private static final Duration WAIT = Duration.ofSeconds(15);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    proxy = fixture.proxy(against(controlPlane.target()));
  }

  /**
   * Over one cell per control plane: each answers grpc-java's named subscriptions by its own rules.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void grpcXdsClientReachesTheBackendTheControlPlaneNamesAndFollowsAnEndpointMove(
      ControlPlaneCell cell) throws Exception {
    UpstreamControlPlane upstream = fixture.controlPlane(cell);
    fixture.proxy(against(cell, upstream));
    Backend first = fixture.add(new Backend("first"));
    Backend second = fixture.add(new Backend("second"));
    XdsClientChannel client = fixture.grpcClient("client-1", "fleet-a", "greeter");
    upstream.setSnapshot("fleet-a", Resources.greeterAt(first.port(), "1"));

    await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "first"::equals);

    upstream.setSnapshot("fleet-a", Resources.greeterAt(second.port(), "2"));

    await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "second"::equals);
    assertThat(upstream.streamGroups()).containsExactly("fleet-a");
  }

  @Test
  void clientsOfOneNodeGroupShareOneUpstreamStreamAndASecondGroupOpensASecond() {
    controlPlane.setSnapshot("fleet-a", Resources.greeterAt(1, "1"));
    controlPlane.setSnapshot("fleet-b", Resources.greeterAt(2, "1"));
    try (var a1 = XdsTestClient.sotwAds(proxy.xdsPort());
        var a2 = XdsTestClient.sotwAds(proxy.xdsPort());
        var b1 = XdsTestClient.sotwAds(proxy.xdsPort())) {
      a1.send(wildcardClusters("a1", "fleet-a"));
      a2.send(wildcardClusters("a2", "fleet-a"));
      assertThat(a1.next(WAIT).getResourcesCount()).isEqualTo(1);
      assertThat(a2.next(WAIT).getResourcesCount()).isEqualTo(1);
      assertThat(controlPlane.streamGroups()).containsExactly("fleet-a");

      b1.send(wildcardClusters("b1", "fleet-b"));
      DiscoveryResponse forB = b1.next(WAIT);

      assertThat(forB.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
      assertThat(controlPlane.streamGroups()).containsExactlyInAnyOrder("fleet-a", "fleet-b");
    }
  }

  private static DiscoveryRequest wildcardClusters(String id, String cluster) {
    return DiscoveryRequest.newBuilder()
        .setNode(node(id, cluster))
        .setTypeUrl(TypeUrl.CLUSTER.url())
        .build();
  }
}
