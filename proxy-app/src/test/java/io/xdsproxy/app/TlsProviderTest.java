package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.scrape;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.handler.ssl.JdkSslContext;
import io.netty.handler.ssl.ReferenceCountedOpenSslContext;
import io.netty.handler.ssl.SslProvider;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which TLS implementation the xDS port runs on ({@code --tls-provider}), and that the proxy says
 * which: the choice itself as a function of whether BoringSSL loads, the context the port is given,
 * the start-up line and {@code /metrics}; and, in a JVM where Netty is told the library does not
 * load ({@code -Dio.netty.handler.ssl.noOpenSsl=true}), the refusal of {@code openssl} and the
 * fallback of {@code auto}. That mutual TLS and certificate rotation work on each provider is
 * TlsTest's.
 */
class TlsProviderTest {

  private static final Duration WAIT = Duration.ofSeconds(30);

  /** What Netty says when told not to load BoringSSL. */
  private static final String DISABLED = "-Dio.netty.handler.ssl.noOpenSsl=true";

  @TempDir Path dir;

  @Test
  void autoIsOpenSslWhereItLoadsAndTheJdksWhereItDoesNotSayingWhy() {
    assertThat(TlsProvider.AUTO.choose(true, null))
        .isEqualTo(new TlsProvider.Chosen(SslProvider.OPENSSL, Optional.empty()));

    TlsProvider.Chosen fallback =
        TlsProvider.AUTO.choose(
            false,
            new UnsatisfiedLinkError("no netty_tcnative_linux_riscv64 in java.library.path"));

    assertThat(fallback.provider()).isEqualTo(SslProvider.JDK);
    assertThat(fallback.name()).isEqualTo("jdk");
    assertThat(fallback.fallbackReason())
        .hasValueSatisfying(why -> assertThat(why).contains("riscv64"));
  }

  @Test
  void openSslWhereItCannotLoadIsRefusedNamingTheFlagAndTheCause() {
    assertThat(TlsProvider.OPENSSL.choose(true, null).name()).isEqualTo("openssl");
    assertThatThrownBy(
            () ->
                TlsProvider.OPENSSL.choose(
                    false,
                    new IllegalStateException(
                        "cannot load", new UnsatisfiedLinkError("libc.musl-x86_64.so.1"))))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("--tls-provider openssl")
        .hasMessageContaining("cannot load")
        .hasMessageContaining("libc.musl-x86_64.so.1")
        .hasMessageContaining("--tls-provider jdk");
    assertThat(TlsProvider.JDK.choose(false, null).name()).isEqualTo("jdk");
  }

  @Test
  void theXdsPortIsGivenAContextOfTheProviderAskedFor() throws Exception {
    Issued server = TestCertificates.ca("xds", dir).issue("proxy");
    ServerTls tls = ServerTls.of(server.cert(), server.key());
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    try {
      assertThat(grpcContext(tls.withProvider(TlsProvider.JDK), timer))
          .isInstanceOf(JdkSslContext.class);
      assertThat(grpcContext(tls.withProvider(TlsProvider.OPENSSL), timer))
          .isInstanceOf(ReferenceCountedOpenSslContext.class);
      assertThat(grpcContext(tls.withProvider(TlsProvider.AUTO), timer))
          .as("auto, on a machine where BoringSSL loads")
          .isInstanceOf(ReferenceCountedOpenSslContext.class);
    } finally {
      timer.shutdownNow();
    }
  }

  private static Object grpcContext(ServerTls tls, ScheduledExecutorService timer)
      throws Exception {
    return XdsPortTls.load(tls, timer, new SimpleMeterRegistry()).orElseThrow().grpcContext();
  }

  @Test
  void theMetricsSayWhichProviderTheXdsPortRunsOn() throws Exception {
    Issued server = TestCertificates.ca("xds", dir).issue("proxy");
    ProxyConfig config =
        ProxyConfig.DEFAULTS
            .withResourcesDir(Path.of("../deploy/examples/resources"))
            .withPorts(0, 0, 0);
    for (TlsProvider provider : List.of(TlsProvider.JDK, TlsProvider.OPENSSL)) {
      try (XdsProxy proxy =
          XdsProxy.start(
              config.withTls(ServerTls.of(server.cert(), server.key()).withProvider(provider)))) {
        assertThat(scrape(proxy).lines())
            .filteredOn(line -> line.startsWith("xds_proxy_tls_provider"))
            .containsExactly(
                "xds_proxy_tls_provider{provider=\"" + provider.flagValue() + "\"} 1.0");
      }
    }
    try (XdsProxy plaintext = XdsProxy.start(config)) {
      assertThat(scrape(plaintext)).doesNotContain("xds_proxy_tls_provider{");
    }
  }

  @Test
  void theStartUpLineSaysWhichProviderTheXdsPortRunsOn() throws Exception {
    Ca ca = TestCertificates.ca("xds", dir);
    Issued server = ca.issue("proxy");

    String line =
        listeningLine(
            List.of(),
            withTls(
                server,
                "--tls-client-ca",
                ca.pem().toString(),
                "--node-group-key",
                "san:^spiffe://[^/]+/ns/([^/]+)/"));

    assertThat(line).contains("(mutual TLS by openssl)");
  }

  @Test
  void autoWhereBoringSslCannotLoadFallsBackToTheJdksAndSaysSo() throws Exception {
    Issued server = TestCertificates.ca("xds", dir).issue("proxy");

    List<String> before = new ArrayList<>();
    String line = listeningLine(List.of(DISABLED), withTls(server), before);

    assertThat(line).contains("(TLS by jdk, as openssl cannot load here)");
    assertThat(before)
        .anySatisfy(
            warning ->
                assertThat(warning)
                    .contains("WARN")
                    .contains("--tls-provider auto")
                    .contains("noOpenSsl"));
  }

  @Test
  void openSslWhereItCannotLoadRefusesToStartNamingTheFlagAndTheCause() throws Exception {
    Issued server = TestCertificates.ca("xds", dir).issue("proxy");
    List<String> args = withTls(server, "--tls-provider", "openssl");
    Process process = proxy(List.of(DISABLED), args).start();

    assertThat(process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the proxy exits").isTrue();
    List<String> lines =
        new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8)
            .lines()
            .toList();
    assertThat(process.exitValue()).isEqualTo(1);
    assertThat(lines)
        .last()
        .asString()
        .startsWith("xds-proxy: cannot start: --tls-provider openssl")
        .contains("OpenSSL was explicit disabled with -Dio.netty.handler.ssl.noOpenSsl=true");
  }

  /**
   * The flags of a proxy serving the example resources with TLS on any free ports, and {@code
   * more}.
   */
  private static List<String> withTls(Issued server, String... more) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "--resources-dir",
                "../deploy/examples/resources",
                "--xds-port",
                "0",
                "--monitoring-port",
                "0",
                "--admin-port",
                "0",
                "--tls-cert",
                server.cert().toString(),
                "--tls-key",
                server.key().toString()));
    args.addAll(List.of(more));
    return args;
  }

  private static String listeningLine(List<String> jvm, List<String> args) throws Exception {
    return listeningLine(jvm, args, new ArrayList<>());
  }

  /**
   * The start-up line of a proxy started in a JVM of its own with {@code jvm} options and {@code
   * args}, the lines it printed before that in {@code before}; the proxy is stopped then.
   */
  private static String listeningLine(List<String> jvm, List<String> args, List<String> before)
      throws Exception {
    Process process = proxy(jvm, args).start();
    try {
      var reader = process.inputReader(StandardCharsets.UTF_8);
      String line;
      while ((line = reader.readLine()) != null && !line.contains("listening for xDS")) {
        before.add(line);
      }
      assertThat(line).as("a 'listening' line after %s", before).isNotNull();
      return line;
    } finally {
      process.destroy();
      process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
  }

  /** {@link Main} in a new JVM on this test's class path, its output merged. */
  private static ProcessBuilder proxy(List<String> jvm, List<String> args) {
    List<String> command =
        new ArrayList<>(
            List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
    command.addAll(jvm);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
    command.addAll(args);
    return new ProcessBuilder(command).redirectErrorStream(true);
  }
}
