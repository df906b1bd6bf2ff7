package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.serving;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.core.TypeUrl;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /config_dump}: each group's store as JSON, every sensitive field redacted (a Secret's
 * key, a key inlined in a Listener), narrowed by the query's {@code group}, {@code type} and {@code
 * name_regex}, written as it is read.
 */
class ConfigDumpTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String PRIVATE_KEY = "-----BEGIN PRIVATE KEY-----not-for-your-eyes";
  private static final String CERTIFICATE = "-----BEGIN CERTIFICATE-----for-all-to-see";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @TempDir Path resources;

  @Test
  void theDumpShowsEachGroupsResourcesAndRedactsSecrets() throws Exception {
    Files.writeString(
        resources.resolve("clusters.yaml"),
        """
        resources:
        - "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
          name: shop
          type: EDS
        """);
    writeSecret(resources);
    XdsProxy proxy = fixture.proxy(serving(resources));
    var client = fixture.sotwAds();
    client.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("n1", "shop-fleet"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    client.next(WAIT);

    HttpResponse<String> response = dump(proxy, "");

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body())
        .doesNotContain(PRIVATE_KEY)
        .contains("shop-cert")
        .contains("[redacted]");
    JsonObject group =
        JsonParser.parseString(response.body())
            .getAsJsonObject()
            .getAsJsonArray("groups")
            .get(0)
            .getAsJsonObject();
    assertThat(group.get("group").getAsString()).isEqualTo("shop-fleet");
    assertThat(group.get("upstream_node_id").getAsString()).isEqualTo("n1");
    JsonObject clusters =
        group.getAsJsonArray("types").asList().stream()
            .map(t -> t.getAsJsonObject())
            .filter(t -> t.get("type_url").getAsString().equals(TypeUrl.CLUSTER.url()))
            .findFirst()
            .orElseThrow();
    JsonObject shop = clusters.getAsJsonArray("resources").get(0).getAsJsonObject();
    assertThat(shop.get("name").getAsString()).isEqualTo("shop");
    assertThat(shop.getAsJsonObject("resource").get("type").getAsString()).isEqualTo("EDS");
    // As Envoy's admin shows a Secret: its name, version and certificate, its key redacted.
    JsonObject secret = resourceOf(group, TypeUrl.SECRET);
    assertThat(secret.get("name").getAsString()).isEqualTo("shop-cert");
    assertThat(secret.get("version").getAsString()).isNotEmpty();
    JsonObject certificate = secret.getAsJsonObject("resource").getAsJsonObject("tlsCertificate");
    assertThat(certificate.getAsJsonObject("certificateChain").get("inlineString").getAsString())
        .isEqualTo(CERTIFICATE);
    assertThat(certificate.getAsJsonObject("privateKey").get("inlineString").getAsString())
        .isEqualTo("[redacted]");
  }

  /**
   * A private key inlined in a Listener's filter chain, in its transport socket's typed_config, is
   * redacted as a Secret's is; the rest of the Listener, the HTTP connection manager's config
   * inside another typed_config included, is shown.
   */
  @Test
  void aKeyInlinedInAListenersFilterChainIsRedactedAndTheRestShown() throws Exception {
    Files.writeString(
        resources.resolve("listeners.yaml"),
        """
        resources:
        - "@type": type.googleapis.com/envoy.config.listener.v3.Listener
          name: ingress
          filter_chains:
          - filters:
            - name: envoy.filters.network.http_connection_manager
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
                stat_prefix: ingress_http
            transport_socket:
              name: envoy.transport_sockets.tls
              typed_config:
                "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
                common_tls_context:
                  tls_certificates:
                  - certificate_chain: { inline_string: "%s" }
                    private_key: { inline_string: "%s" }
        """
            .formatted(CERTIFICATE, PRIVATE_KEY));
    XdsProxy proxy = fixture.proxy(serving(resources));
    var client = fixture.sotwAds();
    client.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("n1", "edge"))
            .setTypeUrl(TypeUrl.LISTENER.url())
            .build());
    assertThat(client.next(WAIT).getResourcesCount()).as(client.transcript()).isEqualTo(1);

    HttpResponse<String> response = dump(proxy, "?type=listeners");

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body())
        .doesNotContain(PRIVATE_KEY)
        .contains(CERTIFICATE)
        .contains("ingress_http");
    JsonObject chain =
        resourceOf(
                JsonParser.parseString(response.body())
                    .getAsJsonObject()
                    .getAsJsonArray("groups")
                    .get(0)
                    .getAsJsonObject(),
                TypeUrl.LISTENER)
            .getAsJsonObject("resource")
            .getAsJsonArray("filterChains")
            .get(0)
            .getAsJsonObject();
    assertThat(
            chain
                .getAsJsonObject("transportSocket")
                .getAsJsonObject("typedConfig")
                .getAsJsonObject("commonTlsContext")
                .getAsJsonArray("tlsCertificates")
                .get(0)
                .getAsJsonObject()
                .getAsJsonObject("privateKey")
                .get("inlineString")
                .getAsString())
        .isEqualTo("[redacted]");
  }

  /** The first resource of {@code type} in a dumped {@code group}. */
  private static JsonObject resourceOf(JsonObject group, TypeUrl type) {
    return group.getAsJsonArray("types").asList().stream()
        .map(JsonElement::getAsJsonObject)
        .filter(t -> t.get("type_url").getAsString().equals(type.url()))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + type.shortName() + " in " + group))
        .getAsJsonArray("resources")
        .get(0)
        .getAsJsonObject();
  }

  /**
   * Clusters {@code shop}, {@code shop-canary} and {@code bank}, the endpoints of {@code shop}, a
   * secret.
   */
  private void writeShopAndBank() throws Exception {
    Files.writeString(
        resources.resolve("clusters.yaml"),
        """
        resources:
        - "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
          name: shop
          type: EDS
        - "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
          name: shop-canary
          type: EDS
        - "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
          name: bank
          type: EDS
        """);
    Files.writeString(
        resources.resolve("endpoints.yaml"),
        """
        resources:
        - "@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
          cluster_name: shop
        """);
    writeSecret(resources);
  }

  /**
   * A proxy serving the resources directory, with a client of each of {@code groups} in its group.
   */
  private XdsProxy proxyWithGroups(String... groups) throws Exception {
    XdsProxy proxy = fixture.proxy(serving(resources));
    for (String group : groups) {
      var client = fixture.sotwAds();
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("client-of-" + group, group))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      client.next(WAIT);
    }
    return proxy;
  }

  private static HttpResponse<String> dump(XdsProxy proxy, String query) throws Exception {
    return ProxyFixture.get(proxy, "/config_dump" + query);
  }

  /** What a dump shows, one line per resource: {@code group type-short-name resource-name}. */
  private static List<String> listed(HttpResponse<String> response) {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    return JsonParser.parseString(response.body())
        .getAsJsonObject()
        .getAsJsonArray("groups")
        .asList()
        .stream()
        .map(JsonElement::getAsJsonObject)
        .flatMap(
            group ->
                group.getAsJsonArray("types").asList().stream()
                    .map(JsonElement::getAsJsonObject)
                    .flatMap(
                        type ->
                            type.getAsJsonArray("resources").asList().stream()
                                .map(
                                    resource ->
                                        group.get("group").getAsString()
                                            + " "
                                            + TypeUrl.parse(type.get("type_url").getAsString())
                                                .shortName()
                                                .replaceAll(".*\\.", "")
                                            + " "
                                            + resource
                                                .getAsJsonObject()
                                                .get("name")
                                                .getAsString())))
        .toList();
  }

  @Test
  void theDumpIsNarrowedByGroupTypeAndNameRegexAloneOrTogether() throws Exception {
    writeShopAndBank();
    XdsProxy proxy = proxyWithGroups("shop-fleet", "bank-fleet");
    assertThat(listed(dump(proxy, "?group=bank-fleet")))
        .allMatch(line -> line.startsWith("bank-fleet "))
        .contains(
            "bank-fleet Cluster bank", "bank-fleet Cluster shop", "bank-fleet Secret shop-cert");
    assertThat(listed(dump(proxy, "?type=clusters")))
        .containsExactly(
            "bank-fleet Cluster bank",
            "bank-fleet Cluster shop",
            "bank-fleet Cluster shop-canary",
            "shop-fleet Cluster bank",
            "shop-fleet Cluster shop",
            "shop-fleet Cluster shop-canary");
    assertThat(listed(dump(proxy, "?type=ClusterLoadAssignment&group=shop-fleet")))
        .containsExactly("shop-fleet ClusterLoadAssignment shop");
    assertThat(listed(dump(proxy, "?type=" + TypeUrl.ENDPOINT.url() + "&group=shop-fleet")))
        .containsExactly("shop-fleet ClusterLoadAssignment shop");
    assertThat(listed(dump(proxy, "?name_regex=canary%7Ccert&group=shop-fleet")))
        .containsExactly("shop-fleet Cluster shop-canary", "shop-fleet Secret shop-cert");
    assertThat(listed(dump(proxy, "?group=shop-fleet&type=Cluster&name_regex=%5Eshop%24")))
        .containsExactly("shop-fleet Cluster shop");
  }

  @Test
  void whatAFilterLeavesEmptyIsLeftOutAndSecretsStayRedacted() throws Exception {
    writeShopAndBank();
    XdsProxy proxy = proxyWithGroups("shop-fleet");
    HttpResponse<String> secrets = dump(proxy, "?type=secrets");
    JsonObject group =
        JsonParser.parseString(secrets.body())
            .getAsJsonObject()
            .getAsJsonArray("groups")
            .get(0)
            .getAsJsonObject();

    assertThat(group.getAsJsonArray("types")).hasSize(1);
    assertThat(secrets.body()).doesNotContain(PRIVATE_KEY).contains("[redacted]");
    assertThat(
            JsonParser.parseString(dump(proxy, "?name_regex=nothing-is-called-this").body())
                .getAsJsonObject()
                .getAsJsonArray("groups"))
        .isEmpty();
    assertThat(
            JsonParser.parseString(dump(proxy, "?group=no-such-group").body())
                .getAsJsonObject()
                .getAsJsonArray("groups"))
        .isEmpty();
  }

  @Test
  void anUnknownParameterTypeOrAnInvalidRegexIsABadRequestSayingWhich() throws Exception {
    XdsProxy proxy = fixture.proxy(serving(resources));
    assertThat(dump(proxy, "?grup=shop-fleet"))
        .satisfies(r -> assertThat(r.statusCode()).isEqualTo(400))
        .satisfies(r -> assertThat(r.body()).contains("grup").contains("group, name_regex, type"));
    assertThat(dump(proxy, "?name_regex=shop("))
        .satisfies(r -> assertThat(r.statusCode()).isEqualTo(400))
        .satisfies(r -> assertThat(r.body()).contains("name_regex").contains("Unclosed group"));
    assertThat(dump(proxy, "?type=clusterz"))
        .satisfies(r -> assertThat(r.statusCode()).isEqualTo(400))
        .satisfies(r -> assertThat(r.body()).contains("clusterz"));
  }

  @Test
  void aDumpOfThousandsOfResourcesArrivesWholeAndInOrderAsAChunkedStream() throws Exception {
    int count = 3000;
    List<String> names =
        IntStream.range(0, count).mapToObj(i -> "cluster-%04d".formatted(i)).toList();
    Files.writeString(
        resources.resolve("clusters.yaml"),
        names.stream()
            .map(
                name ->
                    "- \"@type\": type.googleapis.com/envoy.config.cluster.v3.Cluster\n  name: "
                        + name
                        + "\n  type: EDS\n")
            .collect(Collectors.joining("", "resources:\n", "")));
    XdsProxy proxy = fixture.proxy(serving(resources));
    var client = fixture.sotwAds();
    client.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("n1", "big-fleet"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    assertThat(client.next(WAIT).getResourcesCount()).isEqualTo(count);

    HttpResponse<String> response = dump(proxy, "");

    assertThat(response.headers().firstValue("Transfer-Encoding"))
        .as("written as it is read")
        .hasValue("chunked");
    assertThat(response.headers().firstValue("Content-Length")).isEmpty();
    JsonObject clusters =
        JsonParser.parseString(response.body())
            .getAsJsonObject()
            .getAsJsonArray("groups")
            .get(0)
            .getAsJsonObject()
            .getAsJsonArray("types")
            .get(0)
            .getAsJsonObject();
    assertThat(
            clusters.getAsJsonArray("resources").asList().stream()
                .map(resource -> resource.getAsJsonObject().get("name").getAsString())
                .toList())
        .isEqualTo(names);
    assertThat(clusters.getAsJsonArray("resources").asList())
        .allSatisfy(
            resource ->
                assertThat(
                        resource
                            .getAsJsonObject()
                            .getAsJsonObject("resource")
                            .get("type")
                            .getAsString())
                    .isEqualTo("EDS"));
    assertThat(response.body()).endsWith("}\n");
  }

  /** A Secret whose private key a dump must never show. */
  private static void writeSecret(Path resources) throws IOException {
    Files.writeString(
        resources.resolve("secrets.yaml"),
        """
        resources:
        - "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret
          name: shop-cert
          tls_certificate:
            certificate_chain: { inline_string: "%s" }
            private_key: { inline_string: "%s" }
        """
            .formatted(CERTIFICATE, PRIVATE_KEY));
  }
}
