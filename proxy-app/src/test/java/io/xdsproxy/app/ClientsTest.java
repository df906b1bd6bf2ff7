package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.serving;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.rpc.Status;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.core.TypeUrl;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code GET /clients}: each open stream with its node, group, variant, subscriptions, ACKs and
 * NACKs.
 */
class ClientsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private static JsonObject client(JsonArray clients, String nodeId) {
    return clients.asList().stream()
        .map(c -> c.getAsJsonObject())
        .filter(c -> c.get("nodeId").getAsString().equals(nodeId))
        .findFirst()
        .orElseThrow();
  }

  @Test
  void eachStreamIsListedWithWhatItAskedForAckedAndRejected() throws Exception {
    fixture.proxy(serving(Path.of("../deploy/examples/resources")));
    var sotw = fixture.sotwAds();
    var delta = fixture.deltaAds();
    sotw.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("rejecting", "example"))
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .addResourceNames("example-cluster")
            .build());
    DiscoveryResponse endpoints = sotw.next(WAIT);
    sotw.send(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .addResourceNames("example-cluster")
            .setResponseNonce(endpoints.getNonce())
            .setErrorDetail(Status.newBuilder().setMessage("port 8080 is closed"))
            .build());
    delta.send(
        DeltaDiscoveryRequest.newBuilder()
            .setNode(node("accepting", "example"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    DeltaDiscoveryResponse clusters = delta.next(WAIT);
    delta.send(
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setResponseNonce(clusters.getNonce())
            .build());

    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> {
              JsonArray all = fixture.clients();
              assertThat(all).hasSize(2);
              JsonObject rejecting = client(all, "rejecting");
              assertThat(rejecting.get("group").getAsString()).isEqualTo("example");
              assertThat(rejecting.get("variant").getAsString()).isEqualTo("SotW ADS");
              JsonObject eds = rejecting.getAsJsonArray("types").get(0).getAsJsonObject();
              assertThat(eds.get("typeUrl").getAsString()).isEqualTo(TypeUrl.ENDPOINT.url());
              assertThat(eds.getAsJsonArray("names").get(0).getAsString())
                  .isEqualTo("example-cluster");
              assertThat(eds.get("lastNack").getAsString()).isEqualTo("port 8080 is closed");
              JsonObject cds =
                  client(all, "accepting").getAsJsonArray("types").get(0).getAsJsonObject();
              assertThat(cds.get("wildcard").getAsBoolean()).isTrue();
              assertThat(cds.get("ackedVersion").getAsString())
                  .isEqualTo(clusters.getSystemVersionInfo());
              assertThat(cds.get("lastNack").isJsonNull()).isTrue();
            });
  }
}
