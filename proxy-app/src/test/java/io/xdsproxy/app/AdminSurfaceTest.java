package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.core.v3.DataSource;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.Secret;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.TlsCertificate;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.RestPolls;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The REST-JSON port under the xDS port's checks: with TLS on the xDS port it is HTTPS with the
 * same certificate, with mutual TLS it requires a client certificate, with a node id pattern the
 * node a poll names must be one its certificate allows, and Secrets are answered only to a caller
 * that check let through. A refused caller makes the proxy open no group and no upstream session.
 */
class AdminSurfaceTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String CART = "spiffe://cluster.local/ns/shop/sa/cart";
  private static final String SECRET_KEY = "-----BEGIN PRIVATE KEY-----shop";
  private static final String NAMESPACE_OF_SPIFFE_ID = "san:^spiffe://[^/]+/ns/([^/]+)/";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @TempDir Path dir;

  private ControlPlane controlPlane;
  private Ca ca;
  private Issued server;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    Secret secret =
        Secret.newBuilder()
            .setName("shop-cert")
            .setTlsCertificate(
                TlsCertificate.newBuilder()
                    .setPrivateKey(DataSource.newBuilder().setInlineString(SECRET_KEY)))
            .build();
    controlPlane.setSnapshot(
        "shop",
        Snapshot.create(
            List.of(Resources.cluster("shop")),
            List.of(),
            List.of(),
            List.of(),
            List.of(secret),
            "1"));
    ca = TestCertificates.ca("xds", dir);
    server = ca.issue("proxy");
  }

  /**
   * With client certificates, a client's group is its certificate's namespace, which its node's
   * cluster must equal where it names one.
   */
  private XdsProxy proxy(ServerTls tls) throws IOException {
    ProxyConfig config =
        against(controlPlane.target())
            .withRestPort(0)
            .withTls(tls)
            .withRestPollTimeout(Duration.ofSeconds(3));
    return XdsProxy.start(
        tls.clientCa().isPresent()
            ? config.withNodeGroupKey(List.of("cluster=" + NAMESPACE_OF_SPIFFE_ID))
            : config);
  }

  private ServerTls mutualTlsWithNodeIds() {
    return ServerTls.of(server.cert(), server.key())
        .withClientCa(ca.pem())
        .withNodeIdPattern("{san}~.*");
  }

  /** A client trusting the xDS CA, presenting {@code certificate} if given. */
  private HttpClient https(Optional<Issued> certificate) throws Exception {
    return RestPolls.https(ca.pem(), certificate);
  }

  private static HttpResponse<String> post(
      HttpClient client,
      String scheme,
      XdsProxy proxy,
      String type,
      String nodeId,
      String cluster,
      String names)
      throws Exception {
    return RestPolls.post(
        client, scheme, proxy.restPort().orElseThrow(), type, nodeId, cluster, names);
  }

  private static DiscoveryResponse parse(HttpResponse<String> response) throws Exception {
    return RestPolls.parse(response);
  }

  @Test
  void withTlsOnTheXdsPortAPlaintextPollAndOneWithoutAClientCertificateFail() throws Exception {
    try (XdsProxy proxy = proxy(mutualTlsWithNodeIds())) {
      HttpClient plaintext = HttpClient.newBuilder().connectTimeout(WAIT).build();

      assertThatThrownBy(
              () ->
                  post(
                      plaintext,
                      "http",
                      proxy,
                      "secrets",
                      CART + "~pod-1",
                      "shop",
                      "\"shop-cert\""))
          .as("plaintext HTTP to the HTTPS REST port")
          .isInstanceOf(IOException.class);
      assertThatThrownBy(
              () ->
                  post(
                      https(Optional.empty()),
                      "https",
                      proxy,
                      "secrets",
                      CART + "~pod-1",
                      "shop",
                      "\"shop-cert\""))
          .as("HTTPS without a client certificate")
          .isInstanceOf(IOException.class);
      assertThatThrownBy(
              () ->
                  post(
                      https(Optional.of(TestCertificates.ca("other", dir).issue("cart", CART))),
                      "https",
                      proxy,
                      "secrets",
                      CART + "~pod-1",
                      "shop",
                      "\"shop-cert\""))
          .as("a client certificate of another CA")
          .isInstanceOf(IOException.class);
      assertThat(proxy.groups().groups()).isEmpty();
      assertThat(controlPlane.streamGroups()).isEmpty();
    }
  }

  @Test
  void aNodeTheCertificateDoesNotAllowIsForbiddenAndOpensNoUpstreamSession() throws Exception {
    try (XdsProxy proxy = proxy(mutualTlsWithNodeIds())) {
      HttpClient cart = https(Optional.of(ca.issue("cart", CART)));
      String impostor = "spiffe://cluster.local/ns/bank/sa/vault~pod-1";

      HttpResponse<String> refused = post(cart, "https", proxy, "clusters", impostor, "bank", "");

      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(403);
      assertThat(refused.body()).contains(impostor).contains(CART).contains("tls-node-id-pattern");
      assertThat(proxy.groups().groups()).as("node groups after the refusal").isEmpty();

      // The node the certificate allows is served, and its group is the only one the upstream sees.
      assertThat(
              parse(post(cart, "https", proxy, "clusters", CART + "~pod-1", "shop", ""))
                  .getResourcesCount())
          .isEqualTo(1);
      assertThat(controlPlane.streamGroups()).containsExactly("shop");
    }
  }

  @Test
  void aNodeTheCertificateAllowsIsServedItsSecrets() throws Exception {
    try (XdsProxy proxy = proxy(mutualTlsWithNodeIds())) {
      HttpClient cart = https(Optional.of(ca.issue("cart", CART)));

      DiscoveryResponse response =
          parse(post(cart, "https", proxy, "secrets", CART + "~pod-1", "shop", "\"shop-cert\""));

      assertThat(response.getResourcesCount()).isEqualTo(1);
      Secret secret = response.getResources(0).unpack(Secret.class);
      assertThat(secret.getName()).isEqualTo("shop-cert");
      assertThat(secret.getTlsCertificate().getPrivateKey().getInlineString())
          .isEqualTo(SECRET_KEY);
    }
  }

  @Test
  void withGroupsTheClientChoosesSecretsAreRefusedSayingWhichFlagsAreNeededAndOtherTypesServed()
      throws Exception {
    ProxyConfig clientChosen =
        against(controlPlane.target())
            .withRestPort(0)
            .withTls(ServerTls.of(server.cert(), server.key()).withClientCa(ca.pem()));
    try (XdsProxy proxy =
        XdsProxy.start(
            clientChosen.withTenancy(clientChosen.tenancy().withClientChosenGroups(true)))) {
      HttpClient cart = https(Optional.of(ca.issue("cart", CART)));

      HttpResponse<String> refused =
          post(cart, "https", proxy, "secrets", CART + "~pod-1", "shop", "\"shop-cert\"");

      assertThat(refused.statusCode()).as(refused.body()).isEqualTo(403);
      assertThat(refused.body())
          .contains("--tls-client-ca")
          .contains("san:")
          .contains("--secrets-to-unverified-clients")
          .doesNotContain(SECRET_KEY);
      assertThat(
              parse(post(cart, "https", proxy, "clusters", CART + "~pod-1", "shop", ""))
                  .getResourcesCount())
          .isEqualTo(1);
    }
  }
}
