package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.util.Durations;
import com.google.rpc.Status;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code GET /metrics} in Prometheus text, after real traffic, with the values it should have. */
class MetricsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ScriptedControlPlane upstream;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    upstream = fixture.scriptedControlPlane();
    proxy = fixture.proxy(against(upstream.target()));
  }

  @Test
  void anIdleProxyExportsEverySeriesKnownInAdvanceAtZero() throws Exception {
    List<String> expected = new ArrayList<>();
    for (String service :
        List.of(
            "ads",
            "envoy.config.listener.v3.Listener",
            "envoy.config.route.v3.RouteConfiguration",
            "envoy.config.route.v3.ScopedRouteConfiguration",
            "envoy.config.cluster.v3.Cluster",
            "envoy.config.endpoint.v3.ClusterLoadAssignment",
            "envoy.extensions.transport_sockets.tls.v3.Secret",
            "envoy.service.runtime.v3.Runtime")) {
      expected.add("xds_downstream_streams{protocol=\"sotw\",service=\"" + service + "\"} 0.0");
      expected.add("xds_downstream_streams{protocol=\"delta\",service=\"" + service + "\"} 0.0");
    }
    // Virtual hosts are served incrementally only.
    expected.add(
        "xds_downstream_streams{protocol=\"delta\",service=\"envoy.config.route.v3.VirtualHost\"} 0.0");
    for (TypeUrl type : TypeUrl.known()) {
      String label = "{type=\"" + type.shortName() + "\"}";
      for (String counter :
          List.of(
              "xds_downstream_requests_total",
              "xds_downstream_acks_total",
              "xds_downstream_nacks_total",
              "xds_downstream_responses_total",
              "xds_downstream_sent_bytes_total",
              "xds_do_not_cache_relays_total",
              "xds_ttl_expiries_total",
              "xds_store_resources",
              "xds_store_bytes")) {
        expected.add(counter + label + " 0.0");
      }
      expected.add("xds_fanout_latency_seconds_count" + label + " 0");
    }
    for (String limit :
        List.of(
            "names_per_request",
            "name_length",
            "streams_per_group",
            "streams_per_node",
            "request_rate")) {
      expected.add("xds_downstream_limited_total{limit=\"" + limit + "\"} 0.0");
    }
    for (io.grpc.Status.Code code : io.grpc.Status.Code.values()) {
      expected.add("xds_downstream_streams_ended_total{status=\"" + code.name() + "\"} 0.0");
    }
    // The worker pool's queue by lane (WorkLanes).
    expected.add("xds_worker_queued_tasks{lane=\"initial\"} ");
    expected.add("xds_worker_queued_tasks{lane=\"change\"} ");
    // Newcomers' work held while the xDS event loops lag, and the lag (ServerEventLoops).
    expected.add("xds_worker_initial_held_total ");
    expected.add("xds_server_event_loop_lag_seconds ");
    // Upstream streams waiting for their turn (--upstream-max-new-sessions-per-second).
    expected.add("xds_upstream_sessions_waiting 0.0");
    expected.add("xds_upstream_session_start_wait_seconds_count ");
    expected.add(
        "xds_proxy_build_info{revision=\""
            + BuildInfo.CURRENT.revision()
            + "\",version=\""
            + BuildInfo.CURRENT.version()
            + "\"} 1");
    for (String pool : List.of("xds-proxy-worker", "xds-proxy-timer")) {
      for (String meter :
          List.of(
              "executor_queued_tasks",
              "executor_active_threads",
              "executor_pool_size_threads",
              "executor_completed_tasks_total")) {
        expected.add(meter + "{name=\"" + pool + "\"} ");
      }
    }

    String metrics = fixture.scrape();

    assertThat(metrics).contains(expected);
    assertThat(BuildInfo.CURRENT.version())
        .as("the version Maven wrote into build.properties")
        .matches("\\d+\\.\\d+\\.\\d+.*");
    assertThat(gauge(metrics, "netty_direct_memory_max_bytes")).isPositive();
    assertThat(gauge(metrics, "netty_direct_memory_used_bytes")).isNotNegative();
  }

  /** The value of the one series of {@code name}, a metric without labels. */
  private static double gauge(String metrics, String name) {
    return metrics
        .lines()
        .filter(line -> line.startsWith(name + " "))
        .findFirst()
        .map(line -> Double.parseDouble(line.substring(name.length() + 1)))
        .orElseThrow(() -> new AssertionError("no " + name + " in:\n" + metrics));
  }

  @Test
  void endedStreamsAreCountedByTheStatusTheyEndedWith() throws Exception {
    ManagedChannel channel =
        ManagedChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort()).usePlaintext().build();
    try (var cancelled =
            new XdsTestClient<>(
                channel, AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod());
        var nameless = XdsTestClient.deltaAds(proxy.xdsPort());
        var huge = XdsTestClient.sotwAds(proxy.xdsPort())) {
      cancelled.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      upstream.nextRequest(WAIT);
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(fixture.scrape())
                      .contains("xds_downstream_streams{protocol=\"sotw\",service=\"ads\"} 1.0"));
      cancelled.cancel();
      // The proxy ends a stream whose first request names no node.
      nameless.send(DeltaDiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).build());
      assertThat(nameless.awaitEnd(WAIT).getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
      // gRPC ends one whose request is larger than --max-request-bytes, before the proxy sees it.
      huge.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n2", "fleet"))
              .addResourceNames("x".repeat(ProxyConfig.DEFAULTS.limits().maxRequestBytes()))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      assertThat(huge.awaitEnd(WAIT).getCode()).isEqualTo(io.grpc.Status.Code.RESOURCE_EXHAUSTED);

      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(fixture.scrape())
                      .contains("xds_downstream_streams_ended_total{status=\"CANCELLED\"} 1.0")
                      .contains(
                          "xds_downstream_streams_ended_total{status=\"INVALID_ARGUMENT\"} 1.0")
                      .contains(
                          "xds_downstream_streams_ended_total{status=\"RESOURCE_EXHAUSTED\"} 1.0")
                      .contains("xds_downstream_streams_ended_total{status=\"OK\"} 0.0")
                      .contains("xds_downstream_streams{protocol=\"sotw\",service=\"ads\"} 0.0"));
    } finally {
      channel.shutdownNow();
    }
  }

  @Test
  void nacksStreamsGroupsAndTheJvmAreCounted() throws Exception {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      upstream.nextRequest(WAIT);
      // A malformed response: an endpoint assignment among clusters. The proxy NACKs it upstream.
      upstream.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("bad")
              .setNonce("u1")
              .addResources(
                  Any.pack(ClusterLoadAssignment.newBuilder().setClusterName("x").build()))
              .build());
      assertThat(upstream.nextRequest(WAIT).hasErrorDetail()).isTrue();
      upstream.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("good")
              .setNonce("u2")
              .addResources(Any.pack(Cluster.newBuilder().setName("a").build()))
              .build());
      DiscoveryResponse response = client.next(WAIT);
      // The client rejects what it got.
      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setResponseNonce(response.getNonce())
              .setErrorDetail(Status.newBuilder().setCode(3).setMessage("no"))
              .build());

      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(fixture.scrape())
                      .contains("xds_upstream_nacks_total{group=\"fleet\"} 1.0")
                      .contains(
                          "xds_downstream_nacks_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
                      .contains(
                          "xds_downstream_requests_total{type=\"envoy.config.cluster.v3.Cluster\"} 2.0")
                      .contains(
                          "xds_downstream_responses_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
                      .contains("xds_downstream_streams{protocol=\"sotw\",service=\"ads\"} 1.0")
                      .contains("xds_node_groups 1.0")
                      .contains("jvm_memory_used_bytes"));
    }
    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(fixture.scrape())
                    .contains("xds_downstream_streams{protocol=\"sotw\",service=\"ads\"} 0.0"));
  }

  @Test
  void acksBytesFanOutStoreAndUpstreamStateAreMeasured() throws Exception {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      upstream.nextRequest(WAIT);
      Any cluster =
          Any.pack(Cluster.newBuilder().setName("a").setType(Cluster.DiscoveryType.EDS).build());
      upstream.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("1")
              .setNonce("u1")
              .addResources(cluster)
              .build());
      DiscoveryResponse response = client.next(WAIT);
      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo(response.getVersionInfo())
              .setResponseNonce(response.getNonce())
              .build());

      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(fixture.scrape())
                      .contains(
                          "xds_downstream_acks_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
                      .contains(
                          "xds_downstream_sent_bytes_total{type=\"envoy.config.cluster.v3.Cluster\"} "
                              + (double) response.getSerializedSize())
                      .contains(
                          "xds_fanout_latency_seconds_count{type=\"envoy.config.cluster.v3.Cluster\"} 1")
                      .contains(
                          "xds_fanout_latency_seconds_bucket{type=\"envoy.config.cluster.v3.Cluster\",le=\"+Inf\"} 1")
                      .contains("xds_store_resources{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
                      .contains(
                          "xds_store_bytes{type=\"envoy.config.cluster.v3.Cluster\"} "
                              + (double) cluster.getSerializedSize())
                      .contains("xds_upstream_connected{group=\"fleet\"} 1.0"));

      upstream.endStream(io.grpc.Status.UNAVAILABLE.withDescription("restarting"));

      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(fixture.scrape())
                      .contains("xds_upstream_reconnects_total{group=\"fleet\"} 1.0"));
      // The stream is being reopened and has not answered: not connected.
      assertThat(fixture.scrape()).contains("xds_upstream_connected{group=\"fleet\"} 0.0");
    }
  }

  @Test
  void doNotCacheRelaysAndTtlExpiriesAreCounted() throws Exception {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      upstream.nextRequest(WAIT);
      Resource uncacheable =
          Resource.newBuilder()
              .setName("fresh")
              .setVersion("1")
              .setResource(Any.pack(Cluster.newBuilder().setName("fresh").build()))
              .setCacheControl(Resource.CacheControl.newBuilder().setDoNotCache(true))
              .build();
      Resource leased =
          Resource.newBuilder()
              .setName("leased")
              .setVersion("1")
              .setTtl(Durations.fromMillis(300))
              .setResource(Any.pack(Cluster.newBuilder().setName("leased").build()))
              .build();
      upstream.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("1")
              .setNonce("u1")
              .addResources(Any.pack(uncacheable))
              .addResources(Any.pack(leased))
              .build());

      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(fixture.scrape())
                      .contains(
                          "xds_do_not_cache_relays_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
                      .contains(
                          "xds_ttl_expiries_total{type=\"envoy.config.cluster.v3.Cluster\"} 1.0")
                      .contains(
                          "xds_store_resources{type=\"envoy.config.cluster.v3.Cluster\"} 1.0"));
    }
  }
}
