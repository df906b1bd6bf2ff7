package io.xdsproxy.app;

import static io.xdsproxy.app.testing.XdsTestClient.clustersServed;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.grpc.InsecureServerCredentials;
import io.grpc.ServerCredentials;
import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.upstream.grpc.UpstreamTls;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TokenAuthenticator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A control plane that authenticates its clients by bearer token, as istiod's secure port does
 * ({@link TokenAuthenticator}): the proxy sends the token of {@code --upstream-token-file} on every
 * call, a rotated one on the streams that follow, and never over plaintext unless told to.
 */
class UpstreamTokenTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @TempDir Path dir;

  private static Snapshot clusters(String version, String... names) {
    return Snapshot.create(
        List.of(names).stream().map(Resources::cluster).toList(),
        List.of(),
        List.of(),
        List.of(),
        List.of(),
        version);
  }

  /** A control plane's TLS, with a certificate of {@code ca}. */
  private ServerCredentials tls(Ca ca) throws Exception {
    return ca.issue("istiod").serverTls().build();
  }

  @Test
  void theTokenIsSentOnEveryCallAndARotatedOneOnTheStreamsAfter() throws Exception {
    Ca ca = TestCertificates.ca("control-plane", dir);
    Path token = dir.resolve("istio-token");
    Files.writeString(token, "eyJhbGciOi.first\n");
    TokenAuthenticator authenticator = new TokenAuthenticator("eyJhbGciOi.first");
    try (ControlPlane controlPlane = new ControlPlane(tls(ca), authenticator);
        XdsProxy proxy =
            XdsProxy.start(
                ProxyConfig.DEFAULTS
                    .withUpstream(controlPlane.target())
                    .withPorts(0, 0, 0)
                    .withUpstreamTls(
                        UpstreamTls.PLAINTEXT.withCa(ca.pem()).withTokenFile(token)))) {
      controlPlane.setSnapshot("fleet", clusters("1", "a"));
      assertThat(proxy.describeUpstream()).contains("over TLS", "bearer token in " + token);

      assertThat(clustersServed(proxy.xdsPort(), "fleet", WAIT)).isEqualTo(1);
      assertThat(authenticator.seen()).isNotEmpty().containsOnly("Bearer eyJhbGciOi.first");

      // The token is rotated on disk, and the control plane trusts only the new one; a restart
      // cuts the streams, and those that follow must carry it.
      Files.writeString(token, "eyJhbGciOi.second\n");
      authenticator.expect("eyJhbGciOi.second");
      controlPlane.stop();
      controlPlane.start();
      controlPlane.setSnapshot("fleet", clusters("2", "a", "b"));

      await().atMost(WAIT).until(() -> clustersServed(proxy.xdsPort(), "fleet", WAIT) == 2);
      List<String> seen = authenticator.seen();
      assertThat(seen.get(seen.size() - 1)).isEqualTo("Bearer eyJhbGciOi.second");
    }
  }

  @Test
  void overPlaintextTheTokenIsSentOnlyWhenAllowed() throws Exception {
    Path token = dir.resolve("token");
    Files.writeString(token, "eyJhbGciOi.clear");

    assertThatThrownBy(
            () ->
                ProxyConfig.parse(
                    new String[] {
                      "--upstream", "127.0.0.1:15010", "--upstream-token-file", token.toString()
                    }))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("flag --upstream-token-file")
        .hasMessageContaining("upstream-token-over-plaintext true");

    TokenAuthenticator authenticator = new TokenAuthenticator("eyJhbGciOi.clear");
    try (ControlPlane controlPlane =
        new ControlPlane(InsecureServerCredentials.create(), authenticator)) {
      ProxyConfig config =
          ProxyConfig.parse(
              new String[] {
                "--upstream", controlPlane.target(),
                "--upstream-token-file", token.toString(),
                "--upstream-token-over-plaintext", "true",
                "--xds-port", "0",
                "--monitoring-port", "0",
                "--admin-port", "0"
              });
      try (XdsProxy proxy = XdsProxy.start(config)) {
        controlPlane.setSnapshot("fleet", clusters("1", "a"));

        assertThat(clustersServed(proxy.xdsPort(), "fleet", WAIT)).isEqualTo(1);
        assertThat(authenticator.seen()).isNotEmpty().containsOnly("Bearer eyJhbGciOi.clear");
      }
    }
  }
}
