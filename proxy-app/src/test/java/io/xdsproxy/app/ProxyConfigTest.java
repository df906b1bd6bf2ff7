package io.xdsproxy.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.upstream.grpc.UpstreamTls;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProxyConfigTest {

  @TempDir Path dir;

  @Test
  void noFlagsGiveTheDocumentedDefaults() throws Exception {
    ProxyConfig config = ProxyConfig.parse(new String[0]);

    assertThat(config.upstream()).isEmpty();
    assertThat(config.resourcesDir()).isEqualTo(Path.of("deploy/examples/resources"));
    assertThat(config.xdsPort()).isEqualTo(18000);
    assertThat(config.monitoringPort()).isEqualTo(19000);
    assertThat(config.adminAddress()).isEqualTo("127.0.0.1");
    assertThat(config.adminPort()).isEqualTo(19001);
    assertThat(config.restPort()).as("REST-JSON xDS is off by default").isEmpty();
  }

  @Test
  void theBackoffsTwoKeysMeanTheSameInEitherOrder() throws Exception {
    for (String[] args :
        List.of(
            new String[] {"--upstream-backoff-max", "200ms", "--upstream-backoff-initial", "100ms"},
            new String[] {
              "--upstream-backoff-initial", "100ms", "--upstream-backoff-max", "200ms"
            })) {
      ProxyConfig config = ProxyConfig.parse(args);
      assertThat(config.upstreamBackoff().initial()).isEqualTo(Duration.ofMillis(100));
      assertThat(config.upstreamBackoff().max()).isEqualTo(Duration.ofMillis(200));
    }
    for (String[] args :
        List.of(
            new String[] {"--upstream-backoff-max", "1s", "--upstream-backoff-initial", "2s"},
            new String[] {"--upstream-backoff-initial", "2s", "--upstream-backoff-max", "1s"})) {
      assertThatThrownBy(() -> ProxyConfig.parse(args))
          .isInstanceOf(ConfigException.class)
          .hasMessageContaining("flag --upstream-backoff-max")
          .hasMessageContaining("below its initial wait 2000ms");
    }
  }

  @Test
  void twoListenersOnOnePortAreRefusedNamingBoth() {
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--admin-port", "19000"}))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("flag --admin-port")
        .hasMessageContaining("monitoring-port");
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--rest-port", "18000"}))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("rest-port and xds-port are both 18000");
  }

  @Test
  void logLevelsAreCheckedAndKeptInOrder() throws Exception {
    ProxyConfig config =
        ProxyConfig.parse(
            new String[] {
              "--log-level", "debug", "--log-level", "io.grpc=warn", "--log-format", "json"
            });

    assertThat(config.logLevels()).containsExactly("debug", "io.grpc=warn");
    assertThat(config.logFormat()).isEqualTo(ProxyConfig.LogFormat.JSON);
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--log-level", "io.grpc=loud"}))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("'io.grpc=loud'");
  }

  @Test
  void flagsOverrideTheConfigFileAndBothSpellingsOfAFlagWork() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("proxy.yaml"), "upstream: istiod.istio-system:15010\nxds-port: 15000\n");

    ProxyConfig config =
        ProxyConfig.parse(
            new String[] {"--config", file.toString(), "--xds-port=16000", "--admin-port", "0"});

    assertThat(config.upstream()).contains("istiod.istio-system:15010");
    assertThat(config.xdsPort()).isEqualTo(16000);
    assertThat(config.adminPort()).isZero();
  }

  @Test
  void anUnknownKeyInTheFileIsNamedWithItsLine() throws Exception {
    Path file = Files.writeString(dir.resolve("proxy.yaml"), "xds-port: 15000\nupstreem: cp:1\n");

    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--config", file.toString()}))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("line 2")
        .hasMessageContaining("'upstreem'");
  }

  @Test
  void anUpstreamWithoutAPortIsRefused() {
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--upstream", "control-plane"}))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("flag --upstream")
        .hasMessageContaining("HOST:PORT");
  }

  @Test
  void aFileThatIsNotYamlIsRefusedNamingTheFile() throws Exception {
    Path file = Files.writeString(dir.resolve("broken.yaml"), "xds-port: [15000\n");

    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--config", file.toString()}))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("broken.yaml");
  }

  @Test
  void timeoutsAndTheUpstreamProtocolAreConfigurable() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("proxy.yaml"), "not-found-timeout: 2s\ngroup-idle-grace: 10m\n");

    ProxyConfig config =
        ProxyConfig.parse(
            new String[] {
              "--config",
              file.toString(),
              "--rest-poll-timeout",
              "500ms",
              "--upstream-protocol",
              "delta"
            });

    assertThat(config.notFoundTimeout()).isEqualTo(java.time.Duration.ofSeconds(2));
    assertThat(config.groupIdleGrace()).isEqualTo(java.time.Duration.ofMinutes(10));
    assertThat(config.restPollTimeout()).isEqualTo(java.time.Duration.ofMillis(500));
    assertThat(config.upstreamProtocol())
        .isEqualTo(io.xdsproxy.upstream.grpc.AdsUpstream.Protocol.DELTA);
  }

  @Test
  void theXdsPortsHpackTableIsOffUnlessAskedFor() throws Exception {
    assertThat(ProxyConfig.parse(new String[0]).xdsHpackTable()).isFalse();
    assertThat(ProxyConfig.parse(new String[] {"--xds-hpack-table", "true"}).xdsHpackTable())
        .isTrue();
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--xds-hpack-table", "yes"}))
        .hasMessageContaining("xds-hpack-table 'yes' is neither true nor false");
  }

  @Test
  void aBadDurationOrProtocolIsNamedWithWhereItWasGiven() throws Exception {
    Path file = Files.writeString(dir.resolve("proxy.yaml"), "\nnot-found-timeout: soon\n");

    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--config", file.toString()}))
        .hasMessageContaining("line 2")
        .hasMessageContaining("'soon'")
        .hasMessageContaining("duration");
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--upstream-protocol", "rest"}))
        .hasMessageContaining("--upstream-protocol")
        .hasMessageContaining("'rest'");
  }

  @Test
  void theNodeGroupKeyIsAListInTheFileOrARepeatedFlag() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("proxy.yaml"), "node-group-key:\n  - metadata:NAMESPACE\n  - locality\n");

    assertThat(
            ProxyConfig.parse(new String[] {"--config", file.toString()}).tenancy().nodeGroupKey())
        .containsExactly("metadata:NAMESPACE", "locality");
    assertThat(
            ProxyConfig.parse(
                    new String[] {"--node-group-key", "cluster", "--node-group-key", "id:^(\\w+)-"})
                .tenancy()
                .nodeGroupKey())
        .containsExactly("cluster", "id:^(\\w+)-");
    assertThat(
            ProxyConfig.parse(new String[] {"--upstream-node-id", "xds-proxy~{group}"})
                .tenancy()
                .upstreamNodeId())
        .contains("xds-proxy~{group}");
  }

  @Test
  void aBadNodeGroupPartIsNamedWithItsLine() throws Exception {
    Path file = Files.writeString(dir.resolve("proxy.yaml"), "node-group-key: [cluster, zone]\n");

    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--config", file.toString()}))
        .hasMessageContaining("line 1")
        .hasMessageContaining("'zone'");
  }

  @Test
  void severalUpstreamAddressesAndTheBackoffAreConfigurable() throws Exception {
    ProxyConfig config =
        ProxyConfig.parse(
            new String[] {
              "--upstream",
              "cp-a:15010,cp-b:15010",
              "--upstream-backoff-initial",
              "100ms",
              "--upstream-backoff-max",
              "5s"
            });

    assertThat(config.upstream()).containsExactly("cp-a:15010", "cp-b:15010");
    assertThat(config.upstreamBackoff().initial()).isEqualTo(java.time.Duration.ofMillis(100));
    assertThat(config.upstreamBackoff().max()).isEqualTo(java.time.Duration.ofSeconds(5));
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--upstream", "cp-a:15010,cp-b"}))
        .hasMessageContaining("'cp-b' is not HOST:PORT");
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--upstream-backoff-max", "100ms"}))
        .hasMessageContaining("below its initial wait");
  }

  @Test
  void limitsAndUpstreamKeepaliveAreSetByFlagsOrFileAndNonsenseIsRefusedNamingTheKey()
      throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("limits.yaml"), "max-names-per-request: 20000\nmax-streams-per-node: 4\n");

    ProxyConfig config =
        ProxyConfig.parse(
            new String[] {
              "--config",
              file.toString(),
              "--max-request-bytes",
              "65536",
              "--max-name-length=512",
              "--max-streams-per-connection",
              "8",
              "--max-streams-per-group",
              "5000",
              "--max-requests-per-second",
              "0",
              "--max-node-bytes",
              "32768",
              "--max-node-metadata-bytes=8192",
              "--max-node-metadata-depth",
              "8",
              "--max-node-string-length",
              "300"
            });

    assertThat(config.limits())
        .isEqualTo(
            io.xdsproxy.downstream.xds.Limits.DEFAULTS
                .withMaxRequestBytes(65536)
                .withMaxNamesPerRequest(20000)
                .withMaxNameLength(512)
                .withMaxStreamsPerConnection(8)
                .withMaxStreamsPerGroup(5000)
                .withMaxStreamsPerNode(4)
                .withRequestsPerSecond(0)
                .withMaxNodeBytes(32768)
                .withMaxNodeMetadataBytes(8192)
                .withMaxNodeMetadataDepth(8)
                .withMaxNodeStringLength(300));
    assertThat(ProxyConfig.DEFAULTS.limits()).isEqualTo(io.xdsproxy.downstream.xds.Limits.DEFAULTS);
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--max-streams-per-connection", "0"}))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("flag --max-streams-per-connection")
        .hasMessageContaining("at least 1");
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--max-node-metadata-depth", "0"}))
        .hasMessageContaining("flag --max-node-metadata-depth")
        .hasMessageContaining("at least 1");
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--max-requests-per-second", "-1"}))
        .hasMessageContaining("flag --max-requests-per-second")
        .hasMessageContaining("at least 0");
    assertThat(
            ProxyConfig.parse(
                    new String[] {
                      "--max-connections",
                      "0",
                      "--max-connections-per-address=100",
                      "--max-stream-resets-per-connection",
                      "50"
                    })
                .transportLimits())
        .isEqualTo(new TransportLimits(0, 100, 50));
    assertThat(ProxyConfig.DEFAULTS.transportLimits()).isEqualTo(TransportLimits.DEFAULTS);
    assertThatThrownBy(
            () -> ProxyConfig.parse(new String[] {"--max-stream-resets-per-connection", "-1"}))
        .hasMessageContaining("flag --max-stream-resets-per-connection")
        .hasMessageContaining("at least 0");
    assertThat(
            ProxyConfig.parse(
                    new String[] {
                      "--upstream-keepalive-time", "45s", "--upstream-keepalive-timeout", "5s"
                    })
                .upstreamKeepalive())
        .isEqualTo(
            new io.xdsproxy.upstream.grpc.AdsUpstream.Keepalive(
                java.time.Duration.ofSeconds(45), java.time.Duration.ofSeconds(5)));
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--upstream-keepalive-time", "5s"}))
        .hasMessageContaining("flag --upstream-keepalive-time")
        .hasMessageContaining("at least 10s");
    Path bad = Files.writeString(dir.resolve("bad.yaml"), "max-names-per-request: lots\n");
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--config", bad.toString()}))
        .hasMessageContaining("line 1 (max-names-per-request)")
        .hasMessageContaining("'lots' is not a whole number");
  }

  @Test
  void theShippedExampleConfigIsValidAndSetsEveryKey() throws Exception {
    ProxyConfig config =
        ProxyConfig.parse(new String[] {"--config", "../deploy/examples/xds-proxy.yaml"});

    assertThat(config.upstream()).hasSize(2);
    assertThat(config.upstreamProtocol())
        .isEqualTo(io.xdsproxy.upstream.grpc.AdsUpstream.Protocol.DELTA);
    assertThat(
            config
                .tenancy()
                .rule()
                .keyOf(
                    io.envoyproxy.envoy.config.core.v3.Node.newBuilder()
                        .setId(
                            "sidecar~10.0.0.1~reviews-v1-abc.bookinfo~bookinfo.svc.cluster.local")
                        .build())
                .value())
        .isEqualTo("bookinfo");
    assertThat(config.tenancy().upstreamNodeId()).isPresent();
    String example = Files.readString(Path.of("../deploy/examples/xds-proxy.yaml"));
    java.util.Map<String, Object> keys = new org.yaml.snakeyaml.Yaml().load(example);
    // Keys that name the operator's own files (TLS) are shown commented out: "# tls-cert: /etc/…".
    java.util.List<String> commented =
        example
            .lines()
            .map(COMMENTED_KEY::matcher)
            .filter(java.util.regex.Matcher::matches)
            .map(matcher -> matcher.group(1))
            .toList();
    assertThat(java.util.stream.Stream.concat(keys.keySet().stream(), commented.stream()))
        .as("the example shows every key, set or commented out")
        .containsExactlyInAnyOrderElementsOf(ProxyConfig.KEYS);
  }

  private static final java.util.regex.Pattern COMMENTED_KEY =
      java.util.regex.Pattern.compile("# ([a-z-]+): \\S.*");

  @Test
  void tlsFilesAreCheckedWhenTheConfigIsReadAndAMissingOneIsNamedWithItsKey() throws Exception {
    Path file =
        Files.writeString(
            dir.resolve("proxy.yaml"), "xds-port: 15000\ntls-cert: /nonexistent/tls.crt\n");

    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--config", file.toString()}))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("line 2 (tls-cert)")
        .hasMessageContaining("cannot read /nonexistent/tls.crt");
    assertThatThrownBy(() -> ProxyConfig.parse(new String[] {"--upstream-ca", file.toString()}))
        .hasMessageContaining("flag --upstream-ca")
        .hasMessageContaining("proxy.yaml holds no PEM certificate");
  }

  @Test
  void tlsKeysThatNeedEachOtherAreRefusedAlone() throws Exception {
    Ca ca = TestCertificates.ca("ca", dir);
    Issued proxy = ca.issue("proxy");
    Issued other = ca.issue("other");

    assertThatThrownBy(
            () -> ProxyConfig.parse(new String[] {"--tls-cert", proxy.cert().toString()}))
        .hasMessageContaining("tls-cert is given without tls-key");
    assertThatThrownBy(
            () ->
                ProxyConfig.parse(
                    new String[] {
                      "--tls-cert", proxy.cert().toString(), "--tls-key", other.key().toString()
                    }))
        .hasMessageContaining("flag --tls-cert")
        .hasMessageContaining("is not the key of the certificate");
    assertThatThrownBy(
            () ->
                ProxyConfig.parse(
                    new String[] {
                      "--tls-cert",
                      proxy.cert().toString(),
                      "--tls-key",
                      proxy.key().toString(),
                      "--tls-node-id-pattern",
                      "{san}"
                    }))
        .hasMessageContaining("tls-node-id-pattern is given without tls-client-ca");
    assertThatThrownBy(
            () -> ProxyConfig.parse(new String[] {"--tls-node-id-pattern", "sidecar~.*"}))
        .hasMessageContaining("flag --tls-node-id-pattern")
        .hasMessageContaining("{san}");
    assertThatThrownBy(
            () ->
                ProxyConfig.parse(
                    new String[] {"--upstream-tls", "false", "--upstream-ca", ca.pem().toString()}))
        .hasMessageContaining("upstream-tls is false, but upstream-ca is given");
  }

  @Test
  void tlsOnBothSidesIsConfigurable() throws Exception {
    Ca ca = TestCertificates.ca("ca", dir);
    Issued proxy = ca.issue("proxy");
    Path file =
        Files.writeString(
            dir.resolve("proxy.yaml"),
            String.join(
                "\n",
                "tls-cert: " + proxy.cert(),
                "tls-key: " + proxy.key(),
                "tls-client-ca: " + ca.pem(),
                "tls-node-id-pattern: '{san}~.*'",
                "node-group-key: 'san:^spiffe://[^/]+/ns/([^/]+)/'",
                "upstream-ca: " + ca.pem(),
                "upstream-cert: " + proxy.cert(),
                "upstream-key: " + proxy.key(),
                "upstream-authority: istiod.istio-system.svc",
                ""));

    ProxyConfig config = ProxyConfig.parse(new String[] {"--config", file.toString()});

    assertThat(config.tls())
        .isEqualTo(
            ServerTls.of(proxy.cert(), proxy.key())
                .withClientCa(ca.pem())
                .withNodeIdPattern("{san}~.*"));
    assertThat(config.upstreamTls())
        .isEqualTo(
            UpstreamTls.PLAINTEXT
                .withCa(ca.pem())
                .withClientCertificate(proxy.cert(), proxy.key())
                .withAuthority("istiod.istio-system.svc"));
    assertThat(ProxyConfig.parse(new String[] {"--upstream-tls", "true"}).upstreamTls())
        .isEqualTo(UpstreamTls.systemTrust());
    assertThat(ProxyConfig.parse(new String[0]).upstreamTls().enabled()).isFalse();
  }
}
