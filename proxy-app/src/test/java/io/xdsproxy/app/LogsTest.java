package io.xdsproxy.app;

import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.ClientStrings;
import io.xdsproxy.core.TypeUrl;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The proxy's logs as an operator gets them: {@link Main} in its own JVM, its stdout read line by
 * line; {@code --log-format}, {@code --log-level}, and {@code /logging} on the admin listener.
 * Lines from different threads are never assumed to come in an order; lines of one stream are,
 * since one executor writes them one after the other.
 */
class LogsTest {

  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final String ISO_UTC_MILLIS =
      "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";
  private static final HttpClient http = HttpClient.newHttpClient();

  @Test
  void jsonLinesAreFlatObjectsAndAStreamsLineCarriesItsNodeGroupTypeAndPeer() throws Exception {
    List<String> lines;
    try (Child proxy =
        Child.start(
            "--log-format",
            "json",
            "--resources-dir",
            "../deploy/examples/resources",
            "--xds-port",
            "0",
            "--monitoring-port",
            "0",
            "--admin-port",
            "0",
            "--drain-time",
            "1s")) {
      int xds =
          Main.Listening.in(proxy.awaitLine(line -> line.contains("listening")))
              .orElseThrow()
              .xdsPort();
      try (var client = XdsTestClient.sotwAds(xds)) {
        DiscoveryRequest request =
            DiscoveryRequest.newBuilder()
                .setNode(node("n1", "example"))
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .build();
        client.send(request);
        DiscoveryResponse response = client.next(WAIT);
        client.send(
            request.toBuilder()
                .setResponseNonce(response.getNonce())
                .setErrorDetail(
                    com.google.rpc.Status.newBuilder()
                        .setMessage("cluster \"shop\" rejected:\n\tno endpoints"))
                .build());

        JsonObject nack =
            JsonParser.parseString(proxy.awaitLine(line -> line.contains("NACK from node")))
                .getAsJsonObject();
        assertThat(nack.get("level").getAsString()).isEqualTo("WARN");
        assertThat(nack.get("message").getAsString())
            .as("the client's text, quotes, newline and tab kept")
            .startsWith("NACK from node 'n1'")
            .endsWith("cluster \"shop\" rejected:\n\tno endpoints");
        assertThat(nack.get("node").getAsString()).isEqualTo("n1");
        assertThat(nack.get("group").getAsString()).isEqualTo("example");
        assertThat(nack.get("type").getAsString()).isEqualTo(TypeUrl.CLUSTER.shortName());
        assertThat(nack.get("peer").getAsString()).startsWith("/127.0.0.1:");
        assertThat(nack.get("logger").getAsString()).startsWith("io.xdsproxy.downstream.xds.");
        assertThat(nack.get("thread").getAsString()).isNotEmpty();
      }
      lines = proxy.stop();
    }

    assertThat(lines)
        .as("every line, from start to exit")
        .hasSizeGreaterThan(3)
        .allSatisfy(
            line -> {
              JsonObject json = JsonParser.parseString(line).getAsJsonObject();
              assertThat(json.get("time").getAsString()).matches(ISO_UTC_MILLIS);
              assertThat(json.get("level").getAsString()).isIn("ERROR", "WARN", "INFO");
              assertThat(json.get("message").getAsString()).isNotEmpty();
              assertThat(json.entrySet())
                  .allSatisfy(
                      field ->
                          assertThat(field.getValue().isJsonPrimitive())
                              .as("field %s is flat", field.getKey())
                              .isTrue());
            });
    assertThat(lines)
        .anySatisfy(line -> assertThat(line).contains("stream opened").contains("\"node\":\"n1\""));
  }

  /**
   * A node id that holds a whole log line after a newline (and a carriage return, NEL, the line
   * separator, a bidi override); then a NACK saying the same; then a node whose cluster is a
   * mebibyte.
   */
  @ParameterizedTest
  @ValueSource(strings = {"text", "json"})
  void aClientsStringsCannotForgeALineNorMakeOneLong(String format) throws Exception {
    String forged = "2026-01-01T00:00:00.000Z ERROR [main] i.x.Forged - forged";
    String nodeId = "n1\n" + forged + "\r\u0085\u2028\u2029\u202Eevil";
    List<String> lines;
    try (Child proxy =
        Child.start(
            "--log-format",
            format,
            "--resources-dir",
            "../deploy/examples/resources",
            "--xds-port",
            "0",
            "--monitoring-port",
            "0",
            "--admin-port",
            "0",
            "--drain-time",
            "1s")) {
      int xds =
          Main.Listening.in(proxy.awaitLine(line -> line.contains("listening")))
              .orElseThrow()
              .xdsPort();
      try (var client = XdsTestClient.sotwAds(xds);
          var large = XdsTestClient.sotwAds(xds)) {
        DiscoveryRequest request =
            DiscoveryRequest.newBuilder()
                .setNode(node(nodeId, "example"))
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .build();
        client.send(request);
        DiscoveryResponse response = client.next(WAIT);
        client.send(
            request.toBuilder()
                .setResponseNonce(response.getNonce())
                .setErrorDetail(com.google.rpc.Status.newBuilder().setMessage("nack\n" + forged))
                .build());
        proxy.awaitLine(line -> line.contains("NACK from node"));
        large.send(
            DiscoveryRequest.newBuilder()
                .setNode(node("large\n" + forged, "c".repeat(1024 * 1024)))
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .build());
        assertThat(large.awaitEnd(WAIT).getCode())
            .isEqualTo(io.grpc.Status.Code.RESOURCE_EXHAUSTED);
        proxy.awaitLine(line -> line.contains("--max-node-string-length"));
      }
      lines = proxy.stop();
    }

    assertThat(lines)
        .as("every line is one event's, short, with nothing a line splitter or a terminal obeys")
        .allSatisfy(
            line -> {
              if (format.equals("json")) {
                assertThat(JsonParser.parseString(line).isJsonObject()).isTrue();
              } else {
                assertThat(line).containsPattern("^" + ISO_UTC_MILLIS + " [A-Z]+ +\\[");
              }
              assertThat(line).doesNotStartWith("2026-01-01");
              assertThat(line).hasSizeLessThan(8 * 1024);
              assertThat(line.codePoints().filter(ClientStrings::needsEscape).toArray())
                  .as("characters to escape in %s", line)
                  .isEmpty();
            });
    assertThat(lines.stream().filter(line -> line.contains("stream opened")))
        .as("the forged node's stream opened, in exactly one line")
        .singleElement()
        .satisfies(
            line -> {
              if (format.equals("json")) {
                assertThat(JsonParser.parseString(line).getAsJsonObject().get("node").getAsString())
                    .as("JSON escapes are the client's string, read back as it was")
                    .isEqualTo(nodeId);
              } else {
                assertThat(line).contains("node 'n1\\n2026-01-01T00:00:00.000Z ERROR");
              }
            });
    assertThat(lines).anySatisfy(line -> assertThat(line).contains("NACK from node", "nack"));
  }

  @Test
  void aBareLevelSetsTheRootAndLoggerEqualsLevelSetsThatLogger() throws Exception {
    int xds = freePort();
    int monitoring = freePort();
    List<String> lines;
    try (Child proxy =
        Child.start(
            "--log-format",
            "json",
            "--log-level",
            "warn",
            "--log-level",
            "io.xdsproxy.downstream.xds=debug",
            "--resources-dir",
            "../deploy/examples/resources",
            "--xds-port",
            Integer.toString(xds),
            "--monitoring-port",
            Integer.toString(monitoring),
            "--admin-port",
            "0",
            "--drain-time",
            "1s")) {
      await()
          .atMost(WAIT)
          .ignoreExceptions()
          .until(() -> get(monitoring, "/healthz").statusCode() == 200);
      try (var client = XdsTestClient.sotwAds(xds)) {
        stale(client, clusters(client), "stale-nonce-1");
        proxy.awaitLine(line -> line.contains("stale-nonce-1"));
      }
      lines = proxy.stop();
    }

    assertThat(lines)
        .as("info lines, below the root's warn: the start-up line, the drain's")
        .noneMatch(line -> line.contains("listening") || line.contains("drain"));
    JsonObject stale =
        lines.stream()
            .filter(line -> line.contains("stale-nonce-1"))
            .findFirst()
            .map(line -> JsonParser.parseString(line).getAsJsonObject())
            .orElseThrow();
    assertThat(stale.get("level").getAsString()).isEqualTo("DEBUG");
    assertThat(stale.get("type").getAsString()).isEqualTo(TypeUrl.CLUSTER.shortName());
  }

  @Test
  void postingALevelToLoggingChangesWhatIsLoggedFromThenOnAndGetListsIt() throws Exception {
    try (Child proxy =
        Child.start(
            "--log-format",
            "json",
            "--resources-dir",
            "../deploy/examples/resources",
            "--xds-port",
            "0",
            "--monitoring-port",
            "0",
            "--admin-port",
            "0",
            "--drain-time",
            "1s")) {
      String listening = proxy.awaitLine(line -> line.contains("listening"));
      Main.Listening ports = Main.Listening.in(listening).orElseThrow();
      int xds = ports.xdsPort();
      int admin = ports.adminPort();
      assertThat(levels(get(admin, "/logging")))
          .containsEntry("root", "info")
          .doesNotContainKey("io.xdsproxy.downstream.xds");
      try (var client = XdsTestClient.sotwAds(xds)) {
        DiscoveryResponse response = clusters(client);
        stale(client, response, "before-the-post");
        // Requests on a stream are handled in order: when this one is answered, the stale one was
        // handled.
        client.send(DiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.LISTENER.url()).build());
        client.next(WAIT);

        HttpResponse<String> posted =
            post(admin, "/logging?io.xdsproxy.downstream.xds=debug&level=warn");
        assertThat(posted.statusCode()).as(posted.body()).isEqualTo(200);
        assertThat(levels(posted))
            .containsEntry("io.xdsproxy.downstream.xds", "debug")
            .containsEntry("root", "warn");
        assertThat(levels(get(admin, "/logging")))
            .containsEntry("io.xdsproxy.downstream.xds", "debug")
            .containsEntry("root", "warn");

        stale(client, response, "after-the-post");
        proxy.awaitLine(line -> line.contains("after-the-post"));
      }
      assertThat(proxy.lines())
          .as("one stream's lines come in order: the earlier one would be above")
          .noneMatch(line -> line.contains("before-the-post"));
    }
  }

  @Test
  void loggingTakesOnlyGetAndPostAndARequestWithAnUnknownLevelChangesNothing() throws Exception {
    try (XdsProxy proxy =
        XdsProxy.start(
            ProxyConfig.DEFAULTS
                .withResourcesDir(Path.of("../deploy/examples/resources"))
                .withPorts(0, 0, 0))) {
      int admin = proxy.adminPort();
      Map<String, String> before = levels(get(admin, "/logging"));

      HttpResponse<String> deleted =
          http.send(
              HttpRequest.newBuilder(uri(admin, "/logging?level=debug")).DELETE().build(),
              HttpResponse.BodyHandlers.ofString());
      HttpResponse<String> unknown =
          post(admin, "/logging?io.xdsproxy=debug&io.xdsproxy.upstream=verbose");
      HttpResponse<String> badName =
          post(admin, "/logging?io.xdsproxy=debug&not%20a%20logger=info");
      HttpResponse<String> nothing = post(admin, "/logging");

      assertThat(deleted.statusCode()).isEqualTo(405);
      assertThat(deleted.headers().firstValue("Allow")).hasValue("GET, POST");
      assertThat(unknown.statusCode()).isEqualTo(400);
      assertThat(unknown.body()).contains("'verbose'").contains("io.xdsproxy.upstream");
      assertThat(badName.statusCode()).isEqualTo(400);
      assertThat(badName.body()).contains("'not a logger'");
      assertThat(nothing.statusCode()).isEqualTo(400);
      assertThat(levels(get(admin, "/logging")))
          .as("nothing changed, io.xdsproxy not either")
          .isEqualTo(before);
    }
  }

  /** Subscribes to clusters as node n1, and returns the first response. */
  private static DiscoveryResponse clusters(
      XdsTestClient<DiscoveryRequest, DiscoveryResponse> client) {
    client.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("n1", "example"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    return client.next(WAIT);
  }

  /**
   * A request for clusters naming a nonce the proxy never sent: a stale one, ignored and only
   * logged at debug.
   */
  private static void stale(
      XdsTestClient<DiscoveryRequest, DiscoveryResponse> client,
      DiscoveryResponse response,
      String nonce) {
    client.send(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo(response.getVersionInfo())
            .setResponseNonce(nonce)
            .build());
  }

  private static Map<String, String> levels(HttpResponse<String> response) {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    return JsonParser.parseString(response.body()).getAsJsonObject().asMap().entrySet().stream()
        .collect(
            java.util.stream.Collectors.toMap(
                Map.Entry::getKey, entry -> entry.getValue().getAsString()));
  }

  private static HttpResponse<String> get(int port, String path) {
    return send(HttpRequest.newBuilder(uri(port, path)).build());
  }

  private static HttpResponse<String> post(int port, String path) {
    return send(
        HttpRequest.newBuilder(uri(port, path)).POST(HttpRequest.BodyPublishers.noBody()).build());
  }

  private static HttpResponse<String> send(HttpRequest request) {
    try {
      return http.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static URI uri(int port, String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  /**
   * A port free now, for the one test whose proxy logs no "listening" line (at warn): another
   * process may take it before the proxy binds it.
   */
  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  /**
   * {@link Main} in a JVM of its own on this test's class path; its stdout, line by line, as it
   * comes.
   */
  private static final class Child implements AutoCloseable {
    private final Process process;
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final Thread reader;

    private Child(Process process) {
      this.process = process;
      this.reader =
          new Thread(
              () -> {
                try (BufferedReader stdout = process.inputReader(StandardCharsets.UTF_8)) {
                  for (String line = stdout.readLine(); line != null; line = stdout.readLine()) {
                    lines.add(line);
                  }
                } catch (IOException e) {
                  // the process ended
                }
              },
              "proxy-stdout");
      reader.setDaemon(true);
      reader.start();
    }

    static Child start(String... args) throws IOException {
      List<String> command =
          new ArrayList<>(
              List.of(
                  Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                  "-XX:TieredStopAtLevel=1",
                  "-cp",
                  System.getProperty("java.class.path"),
                  Main.class.getName()));
      command.addAll(List.of(args));
      return new Child(
          new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start());
    }

    /** The first line {@code wanted} matches, waiting for it. */
    String awaitLine(Predicate<String> wanted) {
      await().atMost(WAIT).until(() -> lines.stream().anyMatch(wanted) || !process.isAlive());
      return lines.stream()
          .filter(wanted)
          .findFirst()
          .orElseThrow(
              () -> new AssertionError("the proxy exited; it wrote " + String.join("\n", lines)));
    }

    List<String> lines() {
      return List.copyOf(lines);
    }

    /** Stops the proxy as Kubernetes does (SIGTERM), and returns every line it wrote. */
    List<String> stop() throws InterruptedException {
      process.destroy();
      assertThat(process.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS))
          .as("the proxy exits")
          .isTrue();
      reader.join(WAIT.toMillis());
      return lines();
    }

    @Override
    public void close() {
      process.destroyForcibly();
    }
  }
}
