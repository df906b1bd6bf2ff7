package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
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

/**
 * Demand-driven sessions: a node group without streams closes its upstream stream after the grace
 * period.
 */
class IdleGroupTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot(
        "fleet",
        Snapshot.create(
            List.of(Resources.cluster("a")), List.of(), List.of(), List.of(), List.of(), "1"));
    proxy =
        fixture.proxy(against(controlPlane.target()).withGroupIdleGrace(Duration.ofMillis(500)));
  }

  private void connectAndLeave(String id) {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node(id, "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      assertThat(client.next(WAIT).getResourcesCount()).isEqualTo(1);
    }
  }

  @Test
  void aGroupWithoutStreamsClosesItsUpstreamStreamAfterTheGraceAndAReturningClientOpensANewOne() {
    connectAndLeave("n1");
    await().atMost(WAIT).until(() -> controlPlane.openStreams() == 0);
    assertThat(proxy.groups().groups()).isEmpty();

    connectAndLeave("n2");

    assertThat(controlPlane.streamGroups()).hasSize(2);
  }

  @Test
  void aClientThatComesBackWithinTheGraceKeepsTheGroupAndItsStream() {
    try (var stays = XdsTestClient.sotwAds(proxy.xdsPort())) {
      stays.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("stays", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      stays.next(WAIT);
      connectAndLeave("visitor");

      await()
          .during(Duration.ofSeconds(1))
          .atMost(Duration.ofSeconds(3))
          .until(() -> controlPlane.openStreams() == 1);
      assertThat(proxy.groups().groups()).hasSize(1);
      assertThat(controlPlane.streamGroups()).hasSize(1);
    }
  }
}
