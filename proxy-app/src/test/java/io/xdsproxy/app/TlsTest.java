package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.scrape;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.service.cluster.v3.ClusterDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ChannelCredentials;
import io.grpc.ServerCredentials;
import io.grpc.Status;
import io.grpc.TlsChannelCredentials;
import io.grpc.TlsServerCredentials;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.grpc.UpstreamTls;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import io.xdsproxy.upstream.testing.TestCertificates.Leaf;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.openssl.PEMKeyPair;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcePEMEncryptorBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * TLS on the xDS port (with and without client certificates, the node id checked against the
 * client's certificate, certificates replaced while the proxy runs, on each TLS provider this
 * machine has) and TLS to the control plane, with certificates made by the test.
 */
class TlsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String SPIFFE_CART = "spiffe://cluster.local/ns/shop/sa/cart";

  @TempDir Path dir;

  /**
   * The example resources; with client certificates, a client's group is its certificate's
   * namespace (every group is served the same files).
   */
  private static ProxyConfig servingExamples(ServerTls tls) {
    ProxyConfig config =
        ProxyConfig.DEFAULTS
            .withResourcesDir(Path.of("../deploy/examples/resources"))
            .withPorts(0, 0, 0)
            .withTls(tls);
    return tls.clientCa().isPresent()
        ? config.withNodeGroupKey(List.of("san:^spiffe://[^/]+/ns/([^/]+)/"))
        : config;
  }

  private static ChannelCredentials trusting(Path ca) throws IOException {
    return TlsChannelCredentials.newBuilder().trustManager(ca.toFile()).build();
  }

  private static ChannelCredentials trusting(Path ca, Issued clientCertificate) throws IOException {
    return TlsChannelCredentials.newBuilder()
        .trustManager(ca.toFile())
        .keyManager(clientCertificate.cert().toFile(), clientCertificate.key().toFile())
        .build();
  }

  private static DiscoveryRequest clusters(String nodeId) {
    return DiscoveryRequest.newBuilder()
        .setNode(node(nodeId, "example"))
        .setTypeUrl(TypeUrl.CLUSTER.url())
        .build();
  }

  /**
   * What a new client with {@code credentials} gets for its first request: a response, or nothing.
   */
  private static Optional<DiscoveryResponse> firstResponse(
      int port, ChannelCredentials credentials, String nodeId) {
    try (var client = XdsTestClient.sotwAds(port, credentials)) {
      client.send(clusters(nodeId));
      return client.nextUnlessEnded(WAIT);
    }
  }

  @Test
  void aTlsProxyServesAClientTrustingItsCaAndNotAPlaintextClient() throws Exception {
    Ca ca = TestCertificates.ca("xds", dir);
    Issued server = ca.issue("proxy");
    try (XdsProxy proxy =
            XdsProxy.start(servingExamples(ServerTls.of(server.cert(), server.key())));
        var plaintext = XdsTestClient.sotwAds(proxy.xdsPort())) {
      plaintext.send(clusters("plaintext"));
      Status refused = plaintext.awaitEnd(WAIT);

      assertThat(refused.getCode())
          .as("a plaintext client of a TLS port")
          .isNotEqualTo(Status.Code.OK);
      assertThat(firstResponse(proxy.xdsPort(), trusting(ca.pem()), "client-1"))
          .hasValueSatisfying(response -> assertThat(response.getResourcesCount()).isEqualTo(1));
      assertThat(
              firstResponse(
                  proxy.xdsPort(), trusting(TestCertificates.ca("other", dir).pem()), "client-2"))
          .as("a client that does not trust the proxy's CA")
          .isEmpty();
    }
  }

  @ParameterizedTest
  @EnumSource(names = {"JDK", "OPENSSL"})
  void withMutualTlsOnlyAClientWithACertificateOfTheClientCaIsServed(TlsProvider provider)
      throws Exception {
    Ca ca = TestCertificates.ca("xds", dir);
    Ca clients = TestCertificates.ca("clients", dir);
    Issued server = ca.issue("proxy");
    try (XdsProxy proxy =
        XdsProxy.start(
            servingExamples(
                ServerTls.of(server.cert(), server.key())
                    .withClientCa(clients.pem())
                    .withProvider(provider)))) {
      assertThat(proxy.tlsProvider().orElseThrow().name()).isEqualTo(provider.flagValue());

      assertThat(firstResponse(proxy.xdsPort(), trusting(ca.pem()), "no-certificate"))
          .as("a client without a certificate")
          .isEmpty();
      assertThat(
              firstResponse(proxy.xdsPort(), trusting(ca.pem(), ca.issue("stranger")), "stranger"))
          .as("a client whose certificate another CA signed")
          .isEmpty();
      assertThat(
              firstResponse(
                  proxy.xdsPort(), trusting(ca.pem(), clients.issue("cart", SPIFFE_CART)), "cart"))
          .hasValueSatisfying(response -> assertThat(response.getResourcesCount()).isEqualTo(1));
    }
  }

  @Test
  void aNodeIdTheClientCertificateDoesNotAllowIsRefusedOnEveryKindOfStream() throws Exception {
    Ca ca = TestCertificates.ca("xds", dir);
    Issued server = ca.issue("proxy");
    ChannelCredentials cart = trusting(ca.pem(), ca.issue("cart", SPIFFE_CART));
    ServerTls tls =
        ServerTls.of(server.cert(), server.key())
            .withClientCa(ca.pem())
            .withNodeIdPattern("{san}~.*");
    try (XdsProxy proxy = XdsProxy.start(servingExamples(tls));
        var sotw = XdsTestClient.sotwAds(proxy.xdsPort(), cart);
        var delta = XdsTestClient.deltaAds(proxy.xdsPort(), cart);
        var perType =
            new XdsTestClient<>(
                proxy.xdsPort(), cart, ClusterDiscoveryServiceGrpc.getStreamClustersMethod())) {

      assertThat(firstResponse(proxy.xdsPort(), cart, SPIFFE_CART + "~pod-1"))
          .as("the node its certificate names")
          .isPresent();

      String impostor = "spiffe://cluster.local/ns/bank/sa/vault~pod-1";
      sotw.send(clusters(impostor));
      delta.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node(impostor, "example"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      perType.send(clusters(impostor));
      for (XdsTestClient<?, ?> client : List.of(sotw, delta, perType)) {
        Status refused = client.awaitEnd(WAIT);
        assertThat(refused.getCode())
            .as(client.transcript())
            .isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(refused.getDescription()).contains(impostor).contains(SPIFFE_CART);
      }
    }
  }

  /**
   * Under OpenSSL too, whose key material is kept converted per alias of the key manager: a rotated
   * certificate must come with a new alias.
   */
  @ParameterizedTest
  @EnumSource(names = {"JDK", "OPENSSL"})
  void aServerCertificateReplacedOnDiskIsUsedWithoutARestart(TlsProvider provider)
      throws Exception {
    Ca first = TestCertificates.ca("first", dir);
    Ca second = TestCertificates.ca("second", dir);
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    replace(first.issue("proxy"), cert, key);
    try (XdsProxy proxy =
        XdsProxy.start(servingExamples(ServerTls.of(cert, key).withProvider(provider)))) {
      assertThat(firstResponse(proxy.xdsPort(), trusting(first.pem()), "before")).isPresent();

      replace(second.issue("proxy"), cert, key);

      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(firstResponse(proxy.xdsPort(), trusting(second.pem()), "after"))
                      .isPresent());
      assertThat(firstResponse(proxy.xdsPort(), trusting(first.pem()), "trusting-the-old-ca"))
          .isEmpty();
    }
  }

  /**
   * A client CA added to the file on disk is trusted at the next handshake, and a client whose key
   * manager picks its certificate by the CA names the server lists (the JDK's default one, as a
   * grpc-java client given key files has) presents the one the new CA issued.
   */
  @ParameterizedTest
  @EnumSource(names = {"JDK", "OPENSSL"})
  void aClientCaAddedOnDiskIsTrustedWithoutARestart(TlsProvider provider) throws Exception {
    Ca ca = TestCertificates.ca("xds", dir);
    Ca before = TestCertificates.ca("before", dir);
    Ca after = TestCertificates.ca("after", dir);
    Path clientCas = dir.resolve("client-cas.pem");
    Files.copy(before.pem(), clientCas);
    Issued server = ca.issue("proxy");
    ChannelCredentials newcomer = trusting(ca.pem(), after.issue("cart", SPIFFE_CART));
    try (XdsProxy proxy =
        XdsProxy.start(
            servingExamples(
                ServerTls.of(server.cert(), server.key())
                    .withClientCa(clientCas)
                    .withProvider(provider)))) {
      assertThat(firstResponse(proxy.xdsPort(), newcomer, "before-the-ca")).isEmpty();

      Files.writeString(clientCas, Files.readString(before.pem()) + Files.readString(after.pem()));

      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(firstResponse(proxy.xdsPort(), newcomer, "after-the-ca")).isPresent());
    }
  }

  private static void replace(Issued issued, Path cert, Path key) throws IOException {
    Files.copy(issued.key(), key, StandardCopyOption.REPLACE_EXISTING);
    Files.copy(issued.cert(), cert, StandardCopyOption.REPLACE_EXISTING);
  }

  @Test
  void theProxyReachesAControlPlaneOverTlsTrustingItsCa() throws Exception {
    Ca ca = TestCertificates.ca("control-plane", dir);
    Issued controlPlaneCertificate = ca.issue("istiod");
    ServerCredentials credentials = controlPlaneCertificate.serverTls().build();
    try (ControlPlane controlPlane = new ControlPlane(credentials);
        XdsProxy proxy =
            XdsProxy.start(
                ProxyConfig.DEFAULTS
                    .withUpstream(controlPlane.target())
                    .withPorts(0, 0, 0)
                    .withUpstreamTls(UpstreamTls.PLAINTEXT.withCa(ca.pem())))) {
      controlPlane.setSnapshot("fleet", clusterSnapshot());

      assertThat(proxy.describeUpstream()).contains("over TLS");
      assertClusterServed(proxy);
    }
  }

  @Test
  void theProxyPresentsItsClientCertificateToAControlPlaneThatRequiresOne() throws Exception {
    Ca ca = TestCertificates.ca("control-plane", dir);
    Ca proxies = TestCertificates.ca("proxies", dir);
    Issued controlPlaneCertificate = ca.issue("istiod");
    Issued proxyCertificate =
        proxies.issue("xds-proxy", "spiffe://cluster.local/ns/mesh/sa/xds-proxy");
    ServerCredentials credentials =
        controlPlaneCertificate
            .serverTls()
            .trustManager(proxies.pem().toFile())
            .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE)
            .build();
    try (ControlPlane controlPlane = new ControlPlane(credentials);
        XdsProxy proxy =
            XdsProxy.start(
                ProxyConfig.DEFAULTS
                    .withUpstream(controlPlane.target())
                    .withPorts(0, 0, 0)
                    .withUpstreamTls(
                        UpstreamTls.PLAINTEXT
                            .withCa(ca.pem())
                            .withClientCertificate(proxyCertificate.cert(), proxyCertificate.key())
                            .withAuthority("localhost")))) {
      controlPlane.setSnapshot("fleet", clusterSnapshot());

      assertClusterServed(proxy);
      String metrics = scrape(proxy);
      assertThat(
              metric(
                  metrics,
                  "xds_tls_certificate_expiration_timestamp_seconds{use=\"upstream-client\"}"))
          .isEqualTo(earliestExpiry(proxyCertificate.cert()));
      assertThat(
              metric(
                  metrics, "xds_tls_certificate_expiration_timestamp_seconds{use=\"upstream-ca\"}"))
          .isEqualTo(earliestExpiry(ca.pem()));
      assertThat(metrics).as("the xDS port is plaintext").doesNotContain("use=\"server\"");
    }
  }

  @Test
  void keysAsCertManagerWritesThemByDefaultServeTls() throws Exception {
    Ca ca = TestCertificates.ca("xds", dir);
    for (String algorithm : List.of("RSA", "EC")) {
      Issued server = ca.issue("proxy-" + algorithm, Leaf.DEFAULT.withKey(algorithm, true));
      assertThat(Files.readString(server.key()))
          .as("cert-manager's default encoding of an %s key", algorithm)
          .startsWith("-----BEGIN " + algorithm + " PRIVATE KEY-----");
      ProxyConfig config =
          ProxyConfig.parse(
              new String[] {
                "--tls-cert", server.cert().toString(), "--tls-key", server.key().toString()
              });

      try (XdsProxy proxy =
          XdsProxy.start(
              config
                  .withResourcesDir(Path.of("../deploy/examples/resources"))
                  .withPorts(0, 0, 0))) {
        assertThat(firstResponse(proxy.xdsPort(), trusting(ca.pem()), "client-" + algorithm))
            .as("a TLS client of a proxy with a traditional %s key", algorithm)
            .isPresent();
      }
    }
  }

  @Test
  void anEncryptedKeyIsRefusedSayingHowToDecryptIt() throws Exception {
    Issued server =
        TestCertificates.ca("xds", dir).issue("proxy", Leaf.DEFAULT.withKey("RSA", true));
    Path encrypted = dir.resolve("encrypted.key");
    try (var reader = new PEMParser(Files.newBufferedReader(server.key()));
        var writer = new JcaPEMWriter(Files.newBufferedWriter(encrypted))) {
      PrivateKey key =
          new JcaPEMKeyConverter().getKeyPair((PEMKeyPair) reader.readObject()).getPrivate();
      writer.writeObject(
          key,
          new JcePEMEncryptorBuilder("AES-128-CBC")
              .setProvider(new BouncyCastleProvider())
              .build("secret".toCharArray()));
    }

    assertThatThrownBy(
            () ->
                ProxyConfig.parse(
                    new String[] {
                      "--tls-cert", server.cert().toString(), "--tls-key", encrypted.toString()
                    }))
        .isInstanceOf(ProxyConfig.ConfigException.class)
        .hasMessageContaining("--tls-key")
        .hasMessageContaining("encrypted")
        .hasMessageContaining("openssl pkey");
  }

  @Test
  void theCertificatesExpiryFollowsReloadsAndAChangeThatDoesNotLoadIsCounted() throws Exception {
    Ca ca = TestCertificates.ca("xds", dir);
    Ca clients = TestCertificates.ca("clients", dir);
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    Issued first = ca.issue("proxy", Leaf.DEFAULT.validFor(Duration.ofHours(2)));
    replace(first, cert, key);
    try (XdsProxy proxy =
        XdsProxy.start(servingExamples(ServerTls.of(cert, key).withClientCa(clients.pem())))) {
      String serverExpiry = "xds_tls_certificate_expiration_timestamp_seconds{use=\"server\"}";
      String failures = "xds_tls_reload_failures_total{use=\"server\"}";
      assertThat(metric(scrape(proxy), serverExpiry))
          .as("the leaf, which expires before its CA")
          .isEqualTo(earliestExpiry(first.cert()))
          .isEqualTo(expiry(first.cert()));
      assertThat(
              metric(
                  scrape(proxy),
                  "xds_tls_certificate_expiration_timestamp_seconds{use=\"client-ca\"}"))
          .isEqualTo(earliestExpiry(clients.pem()));
      assertThat(metric(scrape(proxy), failures)).isZero();

      Issued renewed = ca.issue("proxy", Leaf.DEFAULT.validFor(Duration.ofHours(3)));
      replace(renewed, cert, key);
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(metric(scrape(proxy), serverExpiry))
                      .isEqualTo(expiry(renewed.cert())));

      Files.writeString(cert, "not a certificate\n");
      await()
          .atMost(WAIT)
          .untilAsserted(() -> assertThat(metric(scrape(proxy), failures)).isEqualTo(1.0));
      assertThat(metric(scrape(proxy), serverExpiry))
          .as("the renewed certificate stays in use")
          .isEqualTo(expiry(renewed.cert()));
    }
  }

  /** The value of {@code series} (a name and its labels, as exported) in {@code metrics}. */
  private static double metric(String metrics, String series) {
    return metrics
        .lines()
        .filter(line -> line.startsWith(series + " "))
        .findFirst()
        .map(line -> Double.parseDouble(line.substring(series.length() + 1)))
        .orElseThrow(() -> new AssertionError("no " + series + " in:\n" + metrics));
  }

  private static List<X509Certificate> certificates(Path pem) throws Exception {
    try (var in = Files.newInputStream(pem)) {
      return CertificateFactory.getInstance("X.509").generateCertificates(in).stream()
          .map(X509Certificate.class::cast)
          .toList();
    }
  }

  /** The first certificate's notAfter, in Unix seconds. */
  private static double expiry(Path pem) throws Exception {
    return certificates(pem).get(0).getNotAfter().toInstant().getEpochSecond();
  }

  /** The earliest notAfter of the file's certificates, in Unix seconds. */
  private static double earliestExpiry(Path pem) throws Exception {
    return certificates(pem).stream()
        .mapToLong(c -> c.getNotAfter().toInstant().getEpochSecond())
        .min()
        .orElseThrow();
  }

  private static Snapshot clusterSnapshot() {
    return Snapshot.create(
        List.of(Resources.cluster("greeter-cluster")),
        List.of(),
        List.of(),
        List.of(),
        List.of(),
        "1");
  }

  private static void assertClusterServed(XdsProxy proxy) {
    assertThat(XdsTestClient.clustersServed(proxy.xdsPort(), "fleet", WAIT)).isEqualTo(1);
  }
}
