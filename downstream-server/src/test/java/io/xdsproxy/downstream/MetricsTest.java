package io.xdsproxy.downstream;

import static io.xdsproxy.downstream.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.rpc.Status;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.testing.XdsTestClient;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code GET /metrics} in Prometheus text, after real traffic, with the values it should have. */
class MetricsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  private ScriptedControlPlane upstream;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    upstream = new ScriptedControlPlane();
    proxy = XdsProxy.start(ProxyConfig.DEFAULTS.withUpstream(upstream.target()).withPorts(0, 0));
  }

  @AfterEach
  void stop() {
    proxy.close();
    upstream.close();
  }

  private String scrape() throws Exception {
    HttpResponse<String> response = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.adminPort() + "/metrics")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("Content-Type")).hasValueSatisfying(type -> assertThat(type).startsWith("text/plain"));
    return response.body();
  }

  @Test
  void nacksStreamsGroupsAndTheJvmAreCounted() throws Exception {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(DiscoveryRequest.newBuilder().setNode(node("n1", "fleet")).setTypeUrl(TypeUrl.CLUSTER.url()).build());
      upstream.nextRequest(WAIT);
      // A malformed response: an endpoint assignment among clusters. The proxy NACKs it upstream.
      upstream.send(DiscoveryResponse.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).setVersionInfo("bad").setNonce("u1")
          .addResources(Any.pack(ClusterLoadAssignment.newBuilder().setClusterName("x").build())).build());
      assertThat(upstream.nextRequest(WAIT).hasErrorDetail()).isTrue();
      upstream.send(DiscoveryResponse.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).setVersionInfo("good").setNonce("u2")
          .addResources(Any.pack(Cluster.newBuilder().setName("a").build())).build());
      DiscoveryResponse response = client.next(WAIT);
      // The client rejects what it got.
      client.send(DiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).setResponseNonce(response.getNonce())
          .setErrorDetail(Status.newBuilder().setCode(3).setMessage("no")).build());

      await().atMost(WAIT).untilAsserted(() -> assertThat(scrape())
          .contains("xds_upstream_nacks_total{group=\"fleet\"} 1.0")
          .contains("xds_downstream_nacks_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
          .contains("xds_downstream_requests_total{type=\"envoy.config.cluster.v3.Cluster\"} 2.0")
          .contains("xds_downstream_responses_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
          .contains("xds_downstream_streams{protocol=\"sotw\",service=\"ads\"} 1.0")
          .contains("xds_node_groups 1.0")
          .contains("jvm_memory_used_bytes"));
    }
    await().atMost(WAIT).untilAsserted(() ->
        assertThat(scrape()).contains("xds_downstream_streams{protocol=\"sotw\",service=\"ads\"} 0.0"));
  }
}
