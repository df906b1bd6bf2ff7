package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.Status;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Metric labels made of a client's strings, as {@code /metrics} exports them: each bounded in
 * length (a group's key) or in how many values it takes (an opaque type), whatever the clients
 * send.
 */
class MetricLabelsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  /** The longest cluster a node may have by default ({@code --max-node-string-length}). */
  private static final String LONGEST = "fleet-" + "c".repeat(1024 - 6);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot(LONGEST, Resources.clustersAt(8080, "1", "a"));
    proxy = fixture.proxy(against(controlPlane.target()));
  }

  @Test
  void aGroupOfTheLongestClusterAllowedPutsAShortLabelInEverySeriesAndALongerOneIsRefused() {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort());
        var larger = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n1", LONGEST))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      assertThat(client.next(WAIT).getResourcesCount()).isEqualTo(1);
      larger.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n2", "c".repeat(1024 * 1024)))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      assertThat(larger.awaitEnd(WAIT).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);

      await()
          .atMost(WAIT)
          .until(() -> fixture.scrape().contains("xds_upstream_connected{group=\"fleet-ccc"));
      String scraped = fixture.scrape();
      List<String> series =
          scraped.lines().filter(line -> line.contains("group=\"fleet-ccc")).toList();

      assertThat(series)
          .as("the group's series: connected, reconnects, NACKs, streams abandoned")
          .hasSizeGreaterThanOrEqualTo(4)
          .allSatisfy(line -> assertThat(line.length()).as(line).isLessThanOrEqualTo(120));
      assertThat(scraped).doesNotContain("c".repeat(100));
      assertThat(series.get(0)).containsPattern("group=\"fleet-c{42}~[0-9a-f]{12}\"");
    }
  }

  @Test
  void opaqueTypesAClientNamesGetSeriesUpToABoundAndTheRestCountAsOther() {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      IntStream.range(0, 40)
          .forEach(
              i ->
                  client.send(
                      DiscoveryRequest.newBuilder()
                          .setNode(node("n1", "fleet"))
                          .setTypeUrl("type.googleapis.com/invented.v1.Type" + i)
                          .build()));

      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(requests(fixture.scrape(), "other"))
                      .as("the types past the bound")
                      .isEqualTo(8));
      String scraped = fixture.scrape();
      assertThat(
              Pattern.compile("xds_downstream_requests_total\\{type=\"invented\\.v1\\.Type")
                  .matcher(scraped)
                  .results()
                  .count())
          .isEqualTo(32);
    }
  }

  /** The requests counted for type label {@code type}. */
  private static double requests(String scraped, String type) {
    Matcher count =
        Pattern.compile(
                "(?m)^xds_downstream_requests_total\\{type=\""
                    + Pattern.quote(type)
                    + "\"} (\\S+)$")
            .matcher(scraped);
    return count.find() ? Double.parseDouble(count.group(1)) : -1;
  }
}
