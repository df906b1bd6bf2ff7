package io.xdsproxy.bench;

import io.xdsproxy.app.Main;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The servers a benchmark starts, each in a JVM of its own: the control plane ({@link
 * BenchControlPlane}), the floor ({@link BenchFloor}), both driven over stdin, and the proxy's jar
 * started as an operator starts it; and where each listens once started.
 */
final class BenchServers {

  /** How the proxy's start-up line names its xDS port's TLS provider: "mutual TLS by openssl". */
  private static final Pattern TLS_BY = Pattern.compile("TLS by (\\w+)");

  private BenchServers() {}

  /** Where a server of the clients listens, and the TLS provider it serves on if it has TLS. */
  record Ready(int port, Optional<String> tlsProvider) {}

  /**
   * Starts {@link BenchControlPlane} in its own JVM, on the CPUs {@code cpus} only ({@link
   * JavaProcess#start}; empty for any), plaintext, as the proxy's upstream; {@link #ready} says
   * where it listens.
   */
  static JavaProcess startControlPlane(
      String cpus,
      List<String> jvm,
      int groups,
      int clusters,
      BenchResources.Change change,
      Path log)
      throws IOException {
    return startServer(
        BenchControlPlane.class,
        "control plane",
        cpus,
        jvm,
        groups,
        clusters,
        change,
        BenchTls.OFF,
        log);
  }

  /**
   * Starts {@code main}, a server of the clients driven over stdin ({@link BenchControlPlane},
   * {@link BenchFloor}), in its own JVM, serving with {@code tls}.
   */
  static JavaProcess startServer(
      Class<?> main,
      String name,
      String cpus,
      List<String> jvm,
      int groups,
      int clusters,
      BenchResources.Change change,
      BenchTls tls,
      Path log)
      throws IOException {
    List<String> arguments =
        new ArrayList<>(
            List.of(
                "-cp",
                System.getProperty("java.class.path"),
                main.getName(),
                Integer.toString(groups),
                Integer.toString(clusters),
                change.name()));
    arguments.addAll(tls.serverArguments());
    return JavaProcess.start(name, cpus, jvm, arguments, log);
  }

  /** Where a server {@link #startServer} started listens, once it says so. */
  static Ready ready(JavaProcess server) throws InterruptedException {
    String[] line = server.await("ready ", Duration.ofSeconds(60)).split(" ");
    return new Ready(
        Integer.parseInt(line[1]), line.length > 2 ? Optional.of(line[2]) : Optional.empty());
  }

  /**
   * The proxy's JVM, its ports, and the TLS provider of its xDS port as its start-up line names it.
   */
  record Proxy(
      JavaProcess process, int xdsPort, int monitoringPort, Optional<String> tlsProvider) {}

  /**
   * Starts the proxy's jar in its own JVM, on the CPUs {@code cpus} only ({@link
   * JavaProcess#start}; empty for any), fed by the control plane on {@code planePort}, its xDS port
   * with {@code tls}; returns once it is healthy.
   */
  static Proxy startProxy(
      Path jar, String cpus, List<String> jvm, int planePort, BenchTls tls, Path log)
      throws IOException, InterruptedException {
    return startProxy(jar, cpus, jvm, planePort, tls, List.of(), log);
  }

  /** As the other, with {@code flags} added to the proxy's command line (after the bench's own). */
  static Proxy startProxy(
      Path jar,
      String cpus,
      List<String> jvm,
      int planePort,
      BenchTls tls,
      List<String> flags,
      Path log)
      throws IOException, InterruptedException {
    // Ports chosen by the proxy's own bind, read from its "listening" line: a port found free here
    // first could be taken by another process (a test suite's clients) before the proxy binds it.
    List<String> arguments =
        new ArrayList<>(
            List.of(
                "-jar",
                jar.toString(),
                "--upstream",
                "127.0.0.1:" + planePort,
                "--xds-port",
                "0",
                "--monitoring-port",
                "0",
                "--admin-port",
                "0",
                // The load clients all connect from 127.0.0.1, as thousands of clients behind one
                // NAT would: the per-address limits are not what is measured.
                "--max-connections-per-address",
                "0",
                "--max-node-groups-per-client",
                "100000"));
    arguments.addAll(tls.proxyFlags());
    arguments.addAll(flags);
    JavaProcess process = JavaProcess.start("xds-proxy", cpus, jvm, arguments, log);
    try {
      String line = process.awaitContaining("listening for xDS", Duration.ofSeconds(60));
      Main.Listening ports = Main.Listening.in(line).orElseThrow();
      awaitHealthy(process, log, ports.monitoringPort(), Duration.ofSeconds(60));
      Matcher provider = TLS_BY.matcher(line);
      return new Proxy(
          process,
          ports.xdsPort(),
          ports.monitoringPort(),
          provider.find() ? Optional.of(provider.group(1)) : Optional.empty());
    } catch (RuntimeException | InterruptedException e) {
      process.close();
      throw e;
    }
  }

  /**
   * Waits until the proxy's {@code /healthz} answers 200; fails at once if the process exits, and
   * says how it ended, with the end of its log.
   */
  private static void awaitHealthy(
      JavaProcess process, Path log, int monitoringPort, Duration timeout)
      throws InterruptedException {
    HttpClient http = HttpClient.newHttpClient();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline && process.alive()) {
      try {
        if (http.send(
                    HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + monitoringPort + "/healthz"))
                        .build(),
                    HttpResponse.BodyHandlers.discarding())
                .statusCode()
            == 200) {
          return;
        }
      } catch (IOException starting) {
        // not listening yet
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException(
        "xds-proxy not healthy within "
            + timeout
            + " ("
            + process.state()
            + "); the end of its log, "
            + log
            + ":\n"
            + tail(log, 30));
  }

  /** The last {@code lines} lines of {@code file}, or why it cannot be read. */
  private static String tail(Path file, int lines) {
    try {
      List<String> all = Files.readAllLines(file);
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException | java.io.UncheckedIOException e) {
      return "(unreadable: " + e + ")";
    }
  }
}
