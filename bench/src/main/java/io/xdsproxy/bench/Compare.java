package io.xdsproxy.bench;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.function.IntSupplier;

/**
 * The side-by-side benchmark: the same N simulated clients served by java-control-plane directly,
 * then through xds-proxy fed by that control plane, each server in its own JVM; for each, how long
 * one endpoint change takes to reach every client, and what serving them costs. Prints a Markdown
 * table of both and their ratio.
 *
 * <p>{@code java -jar bench/target/xds-bench.jar [--clients N] [--groups G] [--clusters K] [--delta
 * SHARE] [--streams-per-connection S] [--warmup W] [--updates U] [--mode both|direct|proxy]
 * [--change endpoints|cluster] [--proxy-jar PATH] [--jvm "OPTIONS"] [--proxy-jvm "MORE OPTIONS"]
 * [--logs DIR] [--timeout-seconds S]}; {@code --warmup W} makes W updates before the U that are
 * measured, so that what is measured is the servers' steady state rather than their JIT compiling
 * the update path (the same for both); {@code --proxy-jvm} adds options to the proxy's JVM only;
 * {@code --profile DIR} writes a flight recording of the serving process over the updates (not the
 * initial sync) to DIR, and its heap by class once every client is in sync; with {@code
 * --async-profiler LIB} (the path of async-profiler's {@code libasyncProfiler.so}), a CPU profile
 * of every thread, GC and native frames included, instead.
 */
public final class Compare {

  /** One run's options. */
  record Options(
      int clients,
      int groups,
      int clusters,
      double delta,
      int streamsPerConnection,
      int warmup,
      int updates,
      String mode,
      Path proxyJar,
      List<String> jvm,
      List<String> proxyJvm,
      Path logs,
      Duration timeout,
      Optional<Path> profile,
      Optional<Path> asyncProfiler,
      BenchResources.Change change) {

    static Options parse(String[] args) {
      Args given = new Args(args);
      Options options =
          new Options(
              given.integer("clients", 1000),
              given.integer("groups", 10),
              given.integer("clusters", 1000),
              given.decimal("delta", 0.5),
              given.integer("streams-per-connection", 1),
              given.integer("warmup", 0),
              given.integer("updates", 5),
              given.text("mode", "both"),
              given.path("proxy-jar", "proxy-app/target/xds-proxy.jar"),
              given.words("jvm", "-Xmx4g -XX:+UseG1GC"),
              given.words("proxy-jvm", ""),
              given.path("logs", "bench/target/logs"),
              given.seconds("timeout-seconds", 600),
              given.optionalPath("profile"),
              given.optionalPath("async-profiler"),
              BenchResources.Change.valueOf(
                  given.text("change", "endpoints").toUpperCase(Locale.ROOT)));
      given.done();
      if (options.groups > options.clients
          || !List.of("both", "direct", "proxy").contains(options.mode)) {
        throw new IllegalArgumentException("need groups <= clients and mode both, direct or proxy");
      }
      return options;
    }
  }

  /** What one setup measured. Times in milliseconds, sizes in bytes, medians over the updates. */
  record Result(
      String setup,
      double syncSeconds,
      double p50,
      double p99,
      double max,
      double serverCpuPerUpdate,
      double upstreamCpuPerUpdate,
      double clientsCpuPerUpdate,
      double heapPerStream,
      double rssPerStream,
      double bytesPerUpdate,
      int upstreamStreams,
      double upstreamBytesPerUpdate,
      int failedStreams) {}

  public static void main(String[] args) throws Exception {
    Options options = Args.parseOrExit("xds-bench", args, Options::parse);
    List<Result> results = run(options);
    System.out.println(table(options, results));
  }

  static List<Result> run(Options options) throws Exception {
    Files.createDirectories(options.logs());
    List<Result> results = new ArrayList<>();
    if (!options.mode().equals("proxy")) {
      results.add(measure(options, false));
    }
    if (!options.mode().equals("direct")) {
      results.add(measure(options, true));
    }
    return results;
  }

  private static Result measure(Options options, boolean throughProxy) throws Exception {
    String setup = throughProxy ? "through xds-proxy" : "java-control-plane direct";
    log("%s: starting", setup);
    try (JavaProcess plane =
        startControlPlane(
            options.jvm(),
            options.groups(),
            options.clusters(),
            options.change(),
            options
                .logs()
                .resolve(
                    throughProxy ? "control-plane-upstream.log" : "control-plane-direct.log"))) {
      int planePort = readyPort(plane);
      JavaProcess proxy = null;
      try {
        int port = planePort;
        if (throughProxy) {
          List<String> jvm = new ArrayList<>(options.jvm());
          jvm.addAll(options.proxyJvm());
          Proxy started =
              startProxy(
                  options.proxyJar(), jvm, planePort, options.logs().resolve("xds-proxy.log"));
          proxy = started.process();
          port = started.xdsPort();
        }
        JavaProcess server = throughProxy ? proxy : plane;
        try (LoadClients clients =
            new LoadClients(
                new InetSocketAddress("127.0.0.1", port),
                options.groups(),
                options.clusters(),
                options.delta(),
                options.streamsPerConnection(),
                options.change())) {
          // One client per group first: what is left after that is the shared store and fixed
          // costs.
          clients.openUpTo(options.groups());
          await(
              () -> clients.holding(0),
              options.groups(),
              options.timeout(),
              setup + ": first client of each group");
          long heapBase = server.heapAfterGcBytes();
          long rssBase = server.rssBytes();
          long start = System.nanoTime();
          clients.openUpTo(options.clients());
          await(
              () -> clients.holding(0),
              options.clients(),
              options.timeout(),
              setup + ": every client's first state");
          double syncSeconds = (System.nanoTime() - start) / 1e9;
          log("%s: %d clients in sync after %.1f s", setup, options.clients(), syncSeconds);
          int streams = options.clients() - options.groups();
          Thread.sleep(
              2000); // the last clients' ACKs are read before the heap is: they are not what a
          // stream holds
          double heapPerStream =
              Math.max(0, server.heapAfterGcBytes() - heapBase) / (double) Math.max(1, streams);
          double rssPerStream =
              Math.max(0, server.rssBytes() - rssBase) / (double) Math.max(1, streams);

          Optional<Path> profile =
              options
                  .profile()
                  .map(dir -> dir.resolve(throughProxy ? "xds-proxy" : "control-plane"));
          if (profile.isPresent()) {
            Files.createDirectories(options.profile().get());
            server.classHistogram(Path.of(profile.get() + "-histogram.txt"));
          }
          List<double[]> rounds = new ArrayList<>();
          for (int round = 1; round <= options.warmup() + options.updates(); round++) {
            boolean warmup = round <= options.warmup();
            if (round == options.warmup() + 1 && profile.isPresent()) {
              if (options.asyncProfiler().isPresent()) {
                server.startProfiler(options.asyncProfiler().get());
              } else {
                server.startRecording(Path.of(profile.get() + ".jfr"));
              }
            }
            Thread.sleep(1000); // let the ACKs of the last round settle
            double serverCpu = server.cpuSeconds();
            double planeCpu = plane.cpuSeconds();
            double clientsCpu = ownCpuSeconds();
            long bytes = clients.bytesReceived();
            long upstreamBytes = upstreamBytes(plane);
            plane.send("update");
            long changedAt =
                Long.parseLong(plane.await("updated ", Duration.ofSeconds(60)).split(" ")[2]);
            int updated = round;
            await(
                () -> clients.holding(updated),
                options.clients(),
                options.timeout(),
                setup + ": update " + round);
            long[] latencies = clients.latencies(round, changedAt);
            Thread.sleep(500); // the ACKs of this round are processed before the CPU is read
            double[] measured = {
              percentile(latencies, 0.50) / 1e6,
              percentile(latencies, 0.99) / 1e6,
              latencies[latencies.length - 1] / 1e6,
              server.cpuSeconds() - serverCpu,
              throughProxy ? plane.cpuSeconds() - planeCpu : 0,
              clients.bytesReceived() - bytes,
              upstreamBytes(plane) - upstreamBytes,
              ownCpuSeconds() - clientsCpu
            };
            log(
                "%s: %s %d reached every client: p50 %.0f ms, p99 %.0f ms, max %.0f ms",
                setup,
                warmup ? "warm-up update" : "update",
                round,
                measured[0],
                measured[1],
                measured[2]);
            if (!warmup) {
              rounds.add(measured);
            }
          }
          if (profile.isPresent()) {
            if (options.asyncProfiler().isPresent()) {
              server.stopProfiler(options.asyncProfiler().get(), profile.get());
            } else {
              server.stopRecording();
            }
          }
          plane.send("stats");
          int upstreamStreams =
              Integer.parseInt(plane.await("stats ", Duration.ofSeconds(10)).split(" ")[1]);
          return new Result(
              setup,
              syncSeconds,
              median(rounds, 0),
              median(rounds, 1),
              median(rounds, 2),
              median(rounds, 3),
              median(rounds, 4),
              median(rounds, 7),
              heapPerStream,
              rssPerStream,
              median(rounds, 5),
              upstreamStreams,
              median(rounds, 6),
              clients.failed());
        }
      } finally {
        if (proxy != null) {
          proxy.close();
        }
      }
    }
  }

  /** This process's CPU time (the load generator's), in seconds. */
  private static double ownCpuSeconds() {
    return ((com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime()
        / 1e9;
  }

  private static long upstreamBytes(JavaProcess plane) throws InterruptedException {
    plane.send("stats");
    return Long.parseLong(plane.await("stats ", Duration.ofSeconds(10)).split(" ")[3]);
  }

  static String table(Options options, List<Result> results) {
    StringBuilder out = new StringBuilder();
    out.append(
        String.format(
            Locale.ROOT,
            "%d clients (%.0f%% Delta, %d per connection) in %d node groups, %d clusters with %d"
                + " endpoints each; medians over %d updates of one cluster's %s%s%n%n",
            options.clients(),
            options.delta() * 100,
            options.streamsPerConnection(),
            options.groups(),
            options.clusters(),
            BenchResources.ENDPOINTS,
            options.updates(),
            options.change() == BenchResources.Change.CLUSTER
                ? "definition (the whole CDS state)"
                : "endpoints",
            options.warmup() > 0 ? ", after " + options.warmup() + " warm-up updates" : ""));
    out.append("| measure |");
    results.forEach(r -> out.append(' ').append(r.setup()).append(" |"));
    boolean both = results.size() == 2;
    out.append(both ? " direct / proxy |\n" : "\n");
    out.append("| --- |").append(" ---: |".repeat(results.size() + (both ? 1 : 0))).append('\n');
    row(out, results, "every client's first state (s)", Result::syncSeconds, "%.1f", both);
    row(out, results, "update reaches clients, p50 (ms)", Result::p50, "%.0f", both);
    row(out, results, "update reaches clients, p99 (ms)", Result::p99, "%.0f", both);
    row(out, results, "update reaches clients, max (ms)", Result::max, "%.0f", both);
    row(
        out,
        results,
        "serving process CPU per update (s)",
        Result::serverCpuPerUpdate,
        "%.2f",
        both);
    row(
        out,
        results,
        "control plane CPU per update behind the proxy (s)",
        Result::upstreamCpuPerUpdate,
        "%.2f",
        false);
    row(
        out,
        results,
        "load generator CPU per update, same cores (s)",
        Result::clientsCpuPerUpdate,
        "%.2f",
        false);
    row(
        out,
        results,
        "… its share: load generator CPU / serving process CPU",
        r -> r.serverCpuPerUpdate() > 0 ? r.clientsCpuPerUpdate() / r.serverCpuPerUpdate() : 0,
        "%.2f",
        false);
    row(
        out,
        results,
        "serving process heap per stream (KiB)",
        r -> r.heapPerStream() / 1024,
        "%.1f",
        both);
    row(
        out,
        results,
        "serving process RSS per stream (KiB)",
        r -> r.rssPerStream() / 1024,
        "%.1f",
        both);
    row(
        out,
        results,
        "bytes to clients per update (KiB)",
        r -> r.bytesPerUpdate() / 1024,
        "%.0f",
        both);
    row(out, results, "streams open on the control plane", r -> r.upstreamStreams(), "%.0f", both);
    row(
        out,
        results,
        "control plane bytes sent per update (KiB)",
        r -> r.upstreamBytesPerUpdate() / 1024,
        "%.0f",
        both);
    row(out, results, "client streams that failed", r -> r.failedStreams(), "%.0f", false);
    return out.toString();
  }

  private static void row(
      StringBuilder out,
      List<Result> results,
      String name,
      java.util.function.ToDoubleFunction<Result> value,
      String format,
      boolean ratio) {
    out.append("| ").append(name).append(" |");
    results.forEach(
        r ->
            out.append(' ')
                .append(String.format(Locale.ROOT, format, value.applyAsDouble(r)))
                .append(" |"));
    if (results.size() == 2) {
      double direct = value.applyAsDouble(results.get(0));
      double proxy = value.applyAsDouble(results.get(1));
      out.append(
          ratio && proxy > 0 ? String.format(Locale.ROOT, " %.1f× |", direct / proxy) : " |");
    }
    out.append('\n');
  }

  /** Starts {@link BenchControlPlane} in its own JVM; {@link #readyPort} says where it listens. */
  static JavaProcess startControlPlane(
      List<String> jvm, int groups, int clusters, BenchResources.Change change, Path log)
      throws IOException {
    return startControlPlane("", jvm, groups, clusters, change, log);
  }

  /** As the other, on the CPUs {@code cpus} only ({@link JavaProcess#start}). */
  static JavaProcess startControlPlane(
      String cpus,
      List<String> jvm,
      int groups,
      int clusters,
      BenchResources.Change change,
      Path log)
      throws IOException {
    return JavaProcess.start(
        "control plane",
        cpus,
        jvm,
        List.of(
            "-cp",
            System.getProperty("java.class.path"),
            BenchControlPlane.class.getName(),
            Integer.toString(groups),
            Integer.toString(clusters),
            change.name()),
        log);
  }

  static int readyPort(JavaProcess plane) throws InterruptedException {
    return Integer.parseInt(plane.await("ready ", Duration.ofSeconds(60)).split(" ")[1]);
  }

  /** The proxy's JVM and its ports. */
  record Proxy(JavaProcess process, int xdsPort, int monitoringPort) {}

  /**
   * Starts the proxy's jar in its own JVM, fed by the control plane on {@code planePort}; returns
   * once it is healthy.
   */
  static Proxy startProxy(Path jar, List<String> jvm, int planePort, Path log)
      throws IOException, InterruptedException {
    return startProxy(jar, "", jvm, planePort, log);
  }

  /** As the other, on the CPUs {@code cpus} only ({@link JavaProcess#start}). */
  static Proxy startProxy(Path jar, String cpus, List<String> jvm, int planePort, Path log)
      throws IOException, InterruptedException {
    int port = freePort();
    int monitoring = freePort();
    JavaProcess process =
        JavaProcess.start(
            "xds-proxy",
            cpus,
            jvm,
            List.of(
                "-jar",
                jar.toString(),
                "--upstream",
                "127.0.0.1:" + planePort,
                "--xds-port",
                Integer.toString(port),
                "--monitoring-port",
                Integer.toString(monitoring),
                "--admin-port",
                "0"),
            log);
    try {
      awaitHealthy(monitoring, Duration.ofSeconds(60));
    } catch (RuntimeException | InterruptedException e) {
      process.close();
      throw e;
    }
    return new Proxy(process, port, monitoring);
  }

  static void await(IntSupplier count, int wanted, Duration timeout, String what)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (count.getAsInt() < wanted) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            what + ": only " + count.getAsInt() + " of " + wanted + " clients after " + timeout);
      }
      Thread.sleep(5);
    }
  }

  private static void awaitHealthy(int monitoringPort, Duration timeout)
      throws InterruptedException {
    HttpClient http = HttpClient.newHttpClient();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
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
    throw new IllegalStateException("xds-proxy not healthy within " + timeout);
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }

  /** Nearest-rank percentile of sorted values. */
  static long percentile(long[] sorted, double quantile) {
    int rank = (int) Math.ceil(quantile * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }

  private static double median(List<double[]> rounds, int column) {
    double[] values = rounds.stream().mapToDouble(r -> r[column]).sorted().toArray();
    int middle = values.length / 2;
    return values.length % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
  }

  static void log(String format, Object... arguments) {
    System.err.printf(Locale.ROOT, "[xds-bench] " + format + "%n", arguments);
  }
}
