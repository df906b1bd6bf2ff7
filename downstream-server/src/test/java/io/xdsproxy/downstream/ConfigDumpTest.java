package io.xdsproxy.downstream;

import static io.xdsproxy.downstream.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.testing.XdsTestClient;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code GET /config_dump}: each group's store as JSON, secrets redacted. */
class ConfigDumpTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String PRIVATE_KEY = "-----BEGIN PRIVATE KEY-----not-for-your-eyes";

  @TempDir
  Path resources;

  @Test
  void theDumpShowsEachGroupsResourcesAndRedactsSecrets() throws Exception {
    Files.writeString(resources.resolve("clusters.yaml"), """
        resources:
        - "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
          name: shop
          type: EDS
        """);
    Files.writeString(resources.resolve("secrets.yaml"), """
        resources:
        - "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
          name: shop-cert
          tls_certificate:
            private_key: { inline_string: "%s" }
        """.formatted(PRIVATE_KEY));
    try (XdsProxy proxy = XdsProxy.start(ProxyConfig.DEFAULTS.withResourcesDir(resources).withPorts(0, 0, 0));
        var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(DiscoveryRequest.newBuilder().setNode(node("n1", "shop-fleet")).setTypeUrl(TypeUrl.CLUSTER.url()).build());
      client.next(WAIT);

      HttpResponse<String> response = HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.adminPort() + "/config_dump")).build(),
          HttpResponse.BodyHandlers.ofString());

      assertThat(response.statusCode()).isEqualTo(200);
      assertThat(response.body()).doesNotContain(PRIVATE_KEY).contains("shop-cert").contains("[redacted]");
      JsonObject group = JsonParser.parseString(response.body()).getAsJsonObject().getAsJsonArray("groups").get(0)
          .getAsJsonObject();
      assertThat(group.get("group").getAsString()).isEqualTo("shop-fleet");
      assertThat(group.get("upstream_node_id").getAsString()).isEqualTo("n1");
      JsonObject clusters = group.getAsJsonArray("types").asList().stream().map(t -> t.getAsJsonObject())
          .filter(t -> t.get("type_url").getAsString().equals(TypeUrl.CLUSTER.url())).findFirst().orElseThrow();
      JsonObject shop = clusters.getAsJsonArray("resources").get(0).getAsJsonObject();
      assertThat(shop.get("name").getAsString()).isEqualTo("shop");
      assertThat(shop.getAsJsonObject("resource").get("type").getAsString()).isEqualTo("EDS");
    }
  }
}
