package io.xdsproxy.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The proxy as an operator starts it: a separate JVM running {@link Main}, judged by exit code and
 * output.
 */
class CommandLineTest {

  private static final Duration WAIT = Duration.ofSeconds(30);

  /** Starts {@code Main} with {@code args} in a new JVM on this test's class path. */
  private static Process start(String... args) throws IOException {
    return command(args).start();
  }

  /** {@code Main} with {@code args} in a new JVM on this test's class path, its output merged. */
  private static ProcessBuilder command(String... args) {
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                Main.class.getName()));
    command.addAll(List.of(args));
    return new ProcessBuilder(command).redirectErrorStream(true);
  }

  private record Ended(int exitCode, List<String> lines) {}

  private static Ended run(String... args) throws Exception {
    Process process = start(args);
    assertThat(process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the proxy exits").isTrue();
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    return new Ended(process.exitValue(), output.lines().toList());
  }

  @Test
  void versionPrintsTheVersionAndTheRevisionOfTheBuildAndExitsZero() throws Exception {
    Ended ended = run("--version");

    assertThat(ended.exitCode()).isZero();
    assertThat(ended.lines())
        .singleElement()
        .asString()
        .matches("xds-proxy \\d+\\.\\d+\\.\\d+\\S* \\(revision \\S+\\)")
        .isEqualTo(
            "xds-proxy "
                + BuildInfo.CURRENT.version()
                + " (revision "
                + BuildInfo.CURRENT.revision()
                + ")")
        .doesNotContain("${");
  }

  @Test
  void anUnknownFlagIsOneLineOfErrorAndExitCode2() throws Exception {
    Ended ended = run("--xds-prot", "1");

    assertThat(ended.exitCode()).isEqualTo(2);
    assertThat(ended.lines()).hasSize(1);
    assertThat(ended.lines().get(0)).startsWith("xds-proxy: ").contains("unknown flag --xds-prot");
  }

  @Test
  void aPortThatIsNotANumberIsRefusedNamingTheFlag() throws Exception {
    Ended ended = run("--admin-port", "nineteen");

    assertThat(ended.exitCode()).isEqualTo(2);
    assertThat(ended.lines())
        .singleElement()
        .asString()
        .contains("--admin-port")
        .contains("'nineteen'");
  }

  @Test
  void aMissingCertificateFileIsOneLineNamingTheFlagAndTheFile() throws Exception {
    Ended ended = run("--tls-cert", "/nonexistent/tls.crt", "--tls-key", "/nonexistent/tls.key");

    assertThat(ended.exitCode()).isEqualTo(2);
    assertThat(ended.lines())
        .singleElement()
        .asString()
        .contains("--tls-cert")
        .contains("/nonexistent/tls.crt");
  }

  @Test
  void aPortAlreadyInUseIsOneLineNamingThePortAndANonZeroExit() throws Exception {
    try (ServerSocket taken = new ServerSocket()) {
      taken.bind(new InetSocketAddress("0.0.0.0", 0));

      Ended ended =
          run(
              "--resources-dir",
              "../deploy/examples/resources",
              "--xds-port",
              Integer.toString(taken.getLocalPort()),
              "--monitoring-port",
              "0",
              "--admin-port",
              "0");

      assertThat(ended.exitCode()).isNotZero();
      String last = ended.lines().get(ended.lines().size() - 1);
      assertThat(last)
          .startsWith("xds-proxy: cannot start")
          .contains("xDS on port " + taken.getLocalPort());
      assertThat(ended.lines()).noneMatch(line -> line.contains("Exception"));
    }
  }

  @Test
  void aMissingResourcesDirectoryIsNamed() throws Exception {
    Ended ended =
        run(
            "--resources-dir",
            "/nonexistent/resources",
            "--xds-port",
            "0",
            "--monitoring-port",
            "0",
            "--admin-port",
            "0");

    assertThat(ended.exitCode()).isNotZero();
    assertThat(ended.lines()).last().asString().contains("/nonexistent/resources");
  }

  @Test
  void withNoUpstreamItServesTheResourcesDirectoryAndLogsWhereItListens() throws Exception {
    Process process =
        start(
            "--resources-dir",
            "../deploy/examples/resources",
            "--xds-port",
            "0",
            "--monitoring-port",
            "0",
            "--admin-port",
            "0");
    try {
      List<String> seen = new ArrayList<>();
      var reader = process.inputReader(StandardCharsets.UTF_8);
      String line;
      while ((line = reader.readLine()) != null && !line.contains("listening")) {
        seen.add(line);
      }
      assertThat(line)
          .as("a 'listening' line after %s", seen)
          .isNotNull()
          .contains(
              "xds-proxy "
                  + BuildInfo.CURRENT.version()
                  + " (revision "
                  + BuildInfo.CURRENT.revision()
                  + ")")
          .contains("monitoring HTTP on port ")
          .contains("admin HTTP on 127.0.0.1:")
          .contains("upstream: resources directory")
          .contains("deploy/examples/resources");
      HttpResponse<String> health =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(
                          URI.create(
                              "http://127.0.0.1:"
                                  + Main.Listening.in(line).orElseThrow().monitoringPort()
                                  + "/healthz"))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      assertThat(health.statusCode()).isEqualTo(200);
    } finally {
      process.destroy();
      process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
  }

  @Test
  void sigtermTurnsReadinessOffDrainsTheStreamsAndExitsZero(@TempDir Path logs) throws Exception {
    Path log = logs.resolve("proxy.log");
    Process process =
        command(
                "--resources-dir",
                "../deploy/examples/resources",
                "--xds-port",
                "0",
                "--monitoring-port",
                "0",
                "--admin-port",
                "0",
                "--drain-time",
                "2s")
            .redirectOutput(log.toFile())
            .start();
    try {
      await()
          .atMost(WAIT)
          .until(() -> Files.readString(log).contains("listening") || !process.isAlive());
      String listening =
          Files.readString(log)
              .lines()
              .filter(line -> line.contains("listening"))
              .findFirst()
              .orElseThrow(() -> new AssertionError("the proxy exited before it listened: " + log));
      Main.Listening ports = Main.Listening.in(listening).orElseThrow();
      int xds = ports.xdsPort();
      int admin = ports.monitoringPort();
      try (var client = XdsTestClient.sotwAds(xds)) {
        client.send(
            DiscoveryRequest.newBuilder()
                .setNode(XdsTestClient.node("n1", "example"))
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .build());
        client.next(WAIT);
        assertThat(status(admin, "/readyz")).isEqualTo(200);

        process.destroy();

        await().atMost(WAIT).until(() -> status(admin, "/readyz") == 503);
        assertThat(client.awaitEnd(WAIT).getCode())
            .as("the open stream is ended after the drain time")
            .isEqualTo(io.grpc.Status.Code.UNAVAILABLE);
      }
      assertThat(process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
      assertThat(process.exitValue()).isZero();
      assertThat(Files.readString(log)).contains("draining streams").contains("drained; exiting");
    } finally {
      process.destroyForcibly();
    }
  }

  private static int status(int adminPort, String path) {
    try {
      return HttpClient.newHttpClient()
          .send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + adminPort + path)).build(),
              HttpResponse.BodyHandlers.discarding())
          .statusCode();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }
}
