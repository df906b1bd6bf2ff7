package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** "REST-JSON polling subscriptions" on the plaintext REST port, fed by java-control-plane. */
class RestJsonTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String NODE = "\"node\": {\"id\": \"poller\", \"cluster\": \"fleet\"}";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private final HttpClient http = HttpClient.newHttpClient();
  private ControlPlane controlPlane;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    proxy =
        fixture.proxy(
            against(controlPlane.target())
                .withRestPort(0)
                .withRestPollTimeout(Duration.ofSeconds(3)));
  }

  private void publish(String version, int port, String... clusters) {
    controlPlane.setSnapshot("fleet", Resources.clustersAt(port, version, clusters));
  }

  private CompletableFuture<HttpResponse<String>> post(String path, String json) {
    HttpRequest request =
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + proxy.restPort().orElseThrow() + path))
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .header("Content-Type", "application/json")
            .build();
    return http.sendAsync(request, HttpResponse.BodyHandlers.ofString());
  }

  private static DiscoveryResponse parse(HttpResponse<String> response) throws Exception {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    DiscoveryResponse.Builder parsed = DiscoveryResponse.newBuilder();
    JsonFormat.parser().usingTypeRegistry(ApiTypes.json()).merge(response.body(), parsed);
    return parsed.build();
  }

  private static List<String> clusterNames(DiscoveryResponse response) throws Exception {
    return response.getResourcesList().stream().map(RestJsonTest::clusterName).sorted().toList();
  }

  private static String clusterName(Any any) {
    try {
      return any.is(Cluster.class)
          ? any.unpack(Cluster.class).getName()
          : any.unpack(ClusterLoadAssignment.class).getClusterName();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aPollIsAnsweredWithTheResourcesInProto3Json() throws Exception {
    publish("1", 1000, "a", "b");

    DiscoveryResponse response =
        parse(post("/v3/discovery:clusters", "{" + NODE + "}").get(10, TimeUnit.SECONDS));

    assertThat(response.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
    assertThat(clusterNames(response)).containsExactly("a", "b");
    assertThat(response.getVersionInfo()).isNotEmpty();
  }

  @Test
  void aPollForNamedEndpointsGetsThoseOnly() throws Exception {
    publish("1", 1000, "a", "b");

    DiscoveryResponse response =
        parse(
            post("/v3/discovery:endpoints", "{" + NODE + ", \"resource_names\": [\"b\"]}")
                .get(10, TimeUnit.SECONDS));

    assertThat(clusterNames(response)).containsExactly("b");
  }

  @Test
  void aPollHoldingTheCurrentVersionWaitsForAChange() throws Exception {
    publish("1", 1000, "a");
    DiscoveryResponse first =
        parse(post("/v3/discovery:clusters", "{" + NODE + "}").get(10, TimeUnit.SECONDS));

    CompletableFuture<HttpResponse<String>> waiting =
        post(
            "/v3/discovery:clusters",
            "{" + NODE + ", \"version_info\": \"" + first.getVersionInfo() + "\"}");
    await()
        .during(Duration.ofMillis(500))
        .atMost(Duration.ofSeconds(2))
        .until(() -> !waiting.isDone());
    publish("2", 1000, "a", "b");

    DiscoveryResponse changed = parse(waiting.get(10, TimeUnit.SECONDS));
    assertThat(clusterNames(changed)).containsExactly("a", "b");
    assertThat(changed.getVersionInfo()).isNotEqualTo(first.getVersionInfo());
  }

  @Test
  void aPollWithNoChangeWithinTheTimeoutIsNotModified() throws Exception {
    publish("1", 1000, "a");
    DiscoveryResponse first =
        parse(post("/v3/discovery:clusters", "{" + NODE + "}").get(10, TimeUnit.SECONDS));

    HttpResponse<String> unchanged =
        post(
                "/v3/discovery:clusters",
                "{" + NODE + ", \"version_info\": \"" + first.getVersionInfo() + "\"}")
            .get(10, TimeUnit.SECONDS);

    assertThat(unchanged.statusCode()).isEqualTo(304);
  }

  @Test
  void invalidJsonIsABadRequestWithTheParsersMessage() throws Exception {
    HttpResponse<String> response =
        post("/v3/discovery:clusters", "{\"node\": {\"id\": ").get(10, TimeUnit.SECONDS);

    assertThat(response.statusCode()).isEqualTo(400);
    assertThat(response.body()).contains("not a DiscoveryRequest in proto3 JSON");
  }

  @Test
  void anUnknownFieldAnotherTypeUrlAndAMissingNodeAreBadRequests() throws Exception {
    assertThat(
            post("/v3/discovery:clusters", "{" + NODE + ", \"resource_namez\": []}")
                .get(10, TimeUnit.SECONDS))
        .satisfies(r -> assertThat(r.statusCode()).isEqualTo(400))
        .satisfies(r -> assertThat(r.body()).contains("resource_namez"));
    assertThat(
            post(
                    "/v3/discovery:clusters",
                    "{" + NODE + ", \"type_url\": \"" + TypeUrl.LISTENER.url() + "\"}")
                .get(10, TimeUnit.SECONDS))
        .satisfies(r -> assertThat(r.statusCode()).isEqualTo(400))
        .satisfies(r -> assertThat(r.body()).contains(TypeUrl.LISTENER.url()));
    assertThat(post("/v3/discovery:clusters", "{}").get(10, TimeUnit.SECONDS))
        .satisfies(r -> assertThat(r.statusCode()).isEqualTo(400))
        .satisfies(r -> assertThat(r.body()).contains("node"));
  }

  @Test
  void onlyPostIsAccepted() throws Exception {
    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(
                    URI.create(
                        "http://127.0.0.1:"
                            + proxy.restPort().orElseThrow()
                            + "/v3/discovery:clusters"))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(405);
  }

  @Test
  void secretsAreRefusedOnAPlaintextPortSayingWhichFlagsAreNeeded() throws Exception {
    HttpResponse<String> response =
        post("/v3/discovery:secrets", "{" + NODE + ", \"resource_names\": [\"cert\"]}")
            .get(10, TimeUnit.SECONDS);

    assertThat(response.statusCode()).isEqualTo(403);
    assertThat(response.body())
        .contains("--tls-client-ca")
        .contains("san:")
        .contains("--secrets-to-unverified-clients");
    assertThat(proxy.groups().groups()).as("node groups after the refusal").isEmpty();
  }
}
