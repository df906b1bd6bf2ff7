package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.app.testing.Backend;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsClientChannel;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.Versions;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Whatever the upstream speaks, each client gets what its own variant requires: here the upstream
 * speaks incremental ADS (java-control-plane's DeltaAggregatedResources). The other way round, a
 * Delta client fed by a SotW upstream, is {@link DeltaAdsTest}.
 */
class VariantTranslationTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    proxy =
        fixture.proxy(
            against(controlPlane.target()).withUpstreamProtocol(AdsUpstream.Protocol.DELTA));
  }

  private void publish(String version, String... clusters) {
    controlPlane.setSnapshot("fleet", Resources.clustersAt(1000, version, clusters));
  }

  private static List<String> clusterNames(DiscoveryResponse response) {
    return response.getResourcesList().stream()
        .map(
            any -> {
              try {
                return any.unpack(Cluster.class).getName();
              } catch (Exception e) {
                throw new AssertionError(e);
              }
            })
        .sorted()
        .toList();
  }

  @Test
  void aSotwClientFedByADeltaUpstreamGetsTheFullStateOfClustersWithDeletionsByAbsence() {
    publish("1", "a", "b");
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      DiscoveryResponse first = client.next(WAIT);
      assertThat(clusterNames(first)).containsExactly("a", "b");
      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo(first.getVersionInfo())
              .setResponseNonce(first.getNonce())
              .build());

      publish("2", "a", "c");

      await().atMost(WAIT).until(() -> clusterNames(client.next(WAIT)).equals(List.of("a", "c")));
    }
  }

  @Test
  void aDeltaClientFedByADeltaUpstreamGetsTheUpstreamsOwnResourceVersions() {
    publish("1", "a");
    try (var client = XdsTestClient.deltaAds(proxy.xdsPort())) {
      client.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());

      DeltaDiscoveryResponse response = client.next(WAIT);

      Resource a = response.getResources(0);
      assertThat(a.getName()).isEqualTo("a");
      assertThat(a.getVersion())
          .as("the upstream's version, not one the proxy made up")
          .isNotEqualTo(Versions.ofContent(Any.pack(Resources.cluster("a"))));
    }
  }

  @Test
  void grpcXdsClientWorksThroughADeltaUpstream() throws Exception {
    try (Backend backend = new Backend("only");
        XdsClientChannel client =
            new XdsClientChannel(proxy.xdsPort(), "client-1", "fleet", "greeter")) {
      controlPlane.setSnapshot(
          "fleet",
          Snapshot.create(
              List.of(Resources.cluster("greeter-cluster")),
              List.of(Resources.endpoints("greeter-cluster", backend.port())),
              List.of(Resources.listener("greeter", "greeter-route")),
              List.of(Resources.route("greeter-route", "greeter-cluster")),
              List.of(),
              "1"));

      await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "only"::equals);
    }
  }
}
