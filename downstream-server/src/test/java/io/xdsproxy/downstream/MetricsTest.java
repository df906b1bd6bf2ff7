package io.xdsproxy.downstream;

import static io.xdsproxy.downstream.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.util.Durations;
import com.google.rpc.Status;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
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
    proxy = XdsProxy.start(ProxyConfig.DEFAULTS.withUpstream(upstream.target()).withPorts(0, 0, 0));
  }

  @AfterEach
  void stop() {
    proxy.close();
    upstream.close();
  }

  private String scrape() throws Exception {
    HttpResponse<String> response = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.monitoringPort() + "/metrics")).build(),
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

  @Test
  void acksBytesFanOutStoreAndUpstreamStateAreMeasured() throws Exception {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(DiscoveryRequest.newBuilder().setNode(node("n1", "fleet")).setTypeUrl(TypeUrl.CLUSTER.url()).build());
      upstream.nextRequest(WAIT);
      Any cluster = Any.pack(Cluster.newBuilder().setName("a").setType(Cluster.DiscoveryType.EDS).build());
      upstream.send(DiscoveryResponse.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).setVersionInfo("1").setNonce("u1")
          .addResources(cluster).build());
      DiscoveryResponse response = client.next(WAIT);
      client.send(DiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).setVersionInfo(response.getVersionInfo())
          .setResponseNonce(response.getNonce()).build());

      await().atMost(WAIT).untilAsserted(() -> assertThat(scrape())
          .contains("xds_downstream_acks_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
          .contains("xds_downstream_sent_bytes_total{type=\"envoy.config.cluster.v3.Cluster\"} "
              + (double) response.getSerializedSize())
          .contains("xds_fanout_latency_seconds_count{type=\"envoy.config.cluster.v3.Cluster\"} 1")
          .contains("xds_fanout_latency_seconds_bucket{type=\"envoy.config.cluster.v3.Cluster\",le=\"+Inf\"} 1")
          .contains("xds_store_resources{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
          .contains("xds_store_bytes{type=\"envoy.config.cluster.v3.Cluster\"} " + (double) cluster.getSerializedSize())
          .contains("xds_upstream_connected{group=\"fleet\"} 1.0"));

      upstream.endStream(io.grpc.Status.UNAVAILABLE.withDescription("restarting"));

      await().atMost(WAIT).untilAsserted(() -> assertThat(scrape())
          .contains("xds_upstream_reconnects_total{group=\"fleet\"} 1.0"));
      // The stream is being reopened and has not answered: not connected.
      assertThat(scrape()).contains("xds_upstream_connected{group=\"fleet\"} 0.0");
    }
  }

  @Test
  void doNotCacheRelaysAndTtlExpiriesAreCounted() throws Exception {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(DiscoveryRequest.newBuilder().setNode(node("n1", "fleet")).setTypeUrl(TypeUrl.CLUSTER.url()).build());
      upstream.nextRequest(WAIT);
      Resource uncacheable = Resource.newBuilder().setName("fresh").setVersion("1")
          .setResource(Any.pack(Cluster.newBuilder().setName("fresh").build()))
          .setCacheControl(Resource.CacheControl.newBuilder().setDoNotCache(true)).build();
      Resource leased = Resource.newBuilder().setName("leased").setVersion("1").setTtl(Durations.fromMillis(300))
          .setResource(Any.pack(Cluster.newBuilder().setName("leased").build())).build();
      upstream.send(DiscoveryResponse.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).setVersionInfo("1").setNonce("u1")
          .addResources(Any.pack(uncacheable)).addResources(Any.pack(leased)).build());

      await().atMost(WAIT).untilAsserted(() -> assertThat(scrape())
          .contains("xds_do_not_cache_relays_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
          .contains("xds_ttl_expiries_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
          .contains("xds_store_resources{type=\"envoy.config.cluster.v3.Cluster\"} 1.0"));
    }
  }
}
