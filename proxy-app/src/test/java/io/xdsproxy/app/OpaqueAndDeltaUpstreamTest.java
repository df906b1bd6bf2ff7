package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Through an incremental upstream: types the proxy has never heard of pass through ADS as opaque
 * resources, {@code xdstp://} names included; and a name the upstream reports removed reaches Delta
 * clients at once, without waiting for the not-found timeout.
 */
class OpaqueAndDeltaUpstreamTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String WIDGET = "type.googleapis.com/example.v1.Widget";
  private static final String XDSTP_NAME = "xdstp://example.org/example.v1.Widget/blue";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ScriptedControlPlane upstream;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    upstream = fixture.scriptedControlPlane();
    proxy =
        fixture.proxy(
            against(upstream.target())
                .withUpstreamProtocol(AdsUpstream.Protocol.DELTA)
                .withNotFoundTimeout(Duration.ofMinutes(1)));
  }

  /**
   * A resource of a type the proxy has no schema for: its name, as in every xDS type, in field 1.
   */
  private static Any widget(String name) {
    return Any.newBuilder()
        .setTypeUrl(WIDGET)
        .setValue(Cluster.newBuilder().setName(name).build().toByteString())
        .build();
  }

  @Test
  void anOpaqueTypeWithAnXdstpNamePassesThroughToSotwAndDeltaClients() throws Exception {
    try (var sotw = XdsTestClient.sotwAds(proxy.xdsPort());
        var delta = XdsTestClient.deltaAds(proxy.xdsPort())) {
      sotw.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(WIDGET)
              .addResourceNames(XDSTP_NAME)
              .build());
      DeltaDiscoveryRequest asked = upstream.nextDeltaRequest(WAIT);
      assertThat(asked.getTypeUrl()).isEqualTo(WIDGET);
      assertThat(asked.getResourceNamesSubscribeList()).containsExactly(XDSTP_NAME);

      upstream.send(
          DeltaDiscoveryResponse.newBuilder()
              .setTypeUrl(WIDGET)
              .setNonce("u1")
              .addResources(
                  Resource.newBuilder()
                      .setName(XDSTP_NAME)
                      .setVersion("7")
                      .setResource(widget(XDSTP_NAME)))
              .build());

      DiscoveryResponse toSotw = sotw.next(WAIT);
      assertThat(toSotw.getTypeUrl()).isEqualTo(WIDGET);
      assertThat(toSotw.getResourcesList()).containsExactly(widget(XDSTP_NAME));

      delta.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("n2", "fleet"))
              .setTypeUrl(WIDGET)
              .addResourceNamesSubscribe(XDSTP_NAME)
              .build());
      DeltaDiscoveryResponse toDelta = delta.next(WAIT);
      assertThat(toDelta.getResources(0).getName()).isEqualTo(XDSTP_NAME);
      assertThat(toDelta.getResources(0).getVersion()).isEqualTo("7");
      assertThat(toDelta.getResources(0).getResource()).isEqualTo(widget(XDSTP_NAME));
    }
  }

  @Test
  void aNameTheDeltaUpstreamReportsRemovedReachesDeltaClientsAtOnce() throws Exception {
    try (var client = XdsTestClient.deltaAds(proxy.xdsPort())) {
      client.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addResourceNamesSubscribe("ghost")
              .build());
      assertThat(upstream.nextDeltaRequest(WAIT).getResourceNamesSubscribeList())
          .containsExactly("ghost");

      upstream.send(
          DeltaDiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .setNonce("u1")
              .addRemovedResources("ghost")
              .build());

      DeltaDiscoveryResponse response = client.next(Duration.ofSeconds(5));
      assertThat(response.getRemovedResourcesList()).containsExactly("ghost");
    }
  }
}
