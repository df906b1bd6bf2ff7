package io.xdsproxy.bench;

import io.xdsproxy.app.Main;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntSupplier;
import java.util.stream.DoubleStream;

/**
 * The side-by-side benchmark: the same N simulated clients served by java-control-plane directly,
 * then through xds-proxy fed by that control plane, then by the floor ({@link BenchFloor}: a bare
 * gRPC server writing one response encoded once to every stream, the transport alone), each server
 * in its own JVM; for each, how long one endpoint change takes to reach every client, and what
 * serving them costs. Prints a Markdown table of all and the ratios direct / proxy and proxy /
 * floor.
 *
 * <p>{@code java -jar bench/target/xds-bench.jar [--clients N] [--groups G] [--clusters K] [--delta
 * SHARE] [--streams-per-connection S] [--warmup W] [--updates U] [--mode all|both|SETUP,...]
 * [--change endpoints|cluster] [--proxy-jar PATH] [--jvm "OPTIONS"] [--proxy-jvm "MORE OPTIONS"]
 * [--logs DIR] [--timeout-seconds S]}; {@code --mode} names the setups measured, in order: {@code
 * direct}, {@code proxy}, {@code floor}, or several separated by commas; {@code all} (the default)
 * is all three, {@code both} direct and proxy; {@code --warmup W} makes W updates before the U that
 * are measured, so that what is measured is the servers' steady state rather than their JIT
 * compiling the update path (the same for each setup); {@code --proxy-jvm} adds options to the
 * proxy's JVM only; {@code --profile DIR} writes a flight recording of the serving process over the
 * updates (not the initial sync) to DIR, and its heap by class once every client is in sync; with
 * {@code --async-profiler LIB} (the path of async-profiler's {@code libasyncProfiler.so}), a CPU
 * profile of every thread, GC and native frames included, instead.
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
      List<Setup> setups,
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
              Setup.parse(given.text("mode", "all")),
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
      if (options.groups > options.clients) {
        throw new IllegalArgumentException("need groups <= clients");
      }
      return options;
    }
  }

  /** What serves the clients. */
  enum Setup {
    DIRECT("java-control-plane direct", "control-plane"),
    PROXY("through xds-proxy", "xds-proxy"),
    FLOOR("bare gRPC floor", "floor");

    final String label;

    /** What names its logs and profiles. */
    final String file;

    Setup(String label, String file) {
      this.label = label;
      this.file = file;
    }

    /** {@code all}, {@code both}, or setups by name separated by commas, in the order given. */
    static List<Setup> parse(String mode) {
      return switch (mode) {
        case "all" -> List.of(DIRECT, PROXY, FLOOR);
        case "both" -> List.of(DIRECT, PROXY);
        default -> {
          List<Setup> setups = new ArrayList<>();
          for (String name : mode.split(",")) {
            try {
              setups.add(valueOf(name.trim().toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException e) {
              throw new IllegalArgumentException(
                  "--mode '" + mode + "': not all, both, or direct, proxy and floor by commas");
            }
          }
          yield List.copyOf(setups);
        }
      };
    }

    @Override
    public String toString() {
      return label;
    }
  }

  /**
   * What one setup measured. Times in milliseconds, sizes in bytes, medians over the updates but
   * for CPU, the mean.
   */
  record Result(
      Setup setup,
      double syncSeconds,
      double p50,
      double p99,
      double max,
      double serverCpuPerUpdate,
      Map<ThreadCpu.Role, Double> serverCpuByRole,
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
    for (Setup setup : options.setups()) {
      results.add(measure(options, setup));
    }
    return results;
  }

  private static Result measure(Options options, Setup setup) throws Exception {
    log("%s: starting", setup);
    boolean throughProxy = setup == Setup.PROXY;
    // The floor stands where the control plane stands when it serves the clients directly.
    try (JavaProcess plane =
        startServer(
            setup == Setup.FLOOR ? BenchFloor.class : BenchControlPlane.class,
            setup == Setup.FLOOR ? "floor" : "control plane",
            "",
            options.jvm(),
            options.groups(),
            options.clusters(),
            options.change(),
            options
                .logs()
                .resolve(
                    switch (setup) {
                      case DIRECT -> "control-plane-direct.log";
                      case PROXY -> "control-plane-upstream.log";
                      case FLOOR -> "floor.log";
                    }))) {
      int planePort = readyPort(plane);
      JavaProcess proxy = null;
      try {
        int port = planePort;
        if (throughProxy) {
          List<String> jvm = new ArrayList<>(options.jvm());
          jvm.addAll(options.proxyJvm());
          Proxy started =
              startProxy(
                  options.proxyJar(), "", jvm, planePort, options.logs().resolve("xds-proxy.log"));
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

          Optional<Path> profile = options.profile().map(dir -> dir.resolve(setup.file));
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
            ThreadCpu serverThreads = ThreadCpu.of(server.pid());
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
            Map<ThreadCpu.Role, Double> byRole = ThreadCpu.of(server.pid()).since(serverThreads);
            double[] measured =
                DoubleStream.concat(
                        DoubleStream.of(
                            percentile(latencies, 0.50) / 1e6,
                            percentile(latencies, 0.99) / 1e6,
                            latencies[latencies.length - 1] / 1e6,
                            server.cpuSeconds() - serverCpu,
                            throughProxy ? plane.cpuSeconds() - planeCpu : 0,
                            clients.bytesReceived() - bytes,
                            upstreamBytes(plane) - upstreamBytes,
                            ownCpuSeconds() - clientsCpu),
                        // each role's, in the roles' order (an EnumMap's), from ROLES on
                        byRole.values().stream().mapToDouble(Double::doubleValue))
                    .toArray();
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
              mean(rounds, 3),
              byRole(rounds, ROLES),
              mean(rounds, 4),
              mean(rounds, 7),
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

  /** Where a round's figures of CPU by thread role begin, one per role in the roles' order. */
  private static final int ROLES = 8;

  /** The means of each role's CPU per update, the roles' in order from {@code first} on. */
  private static Map<ThreadCpu.Role, Double> byRole(List<double[]> rounds, int first) {
    Map<ThreadCpu.Role, Double> means = new EnumMap<>(ThreadCpu.Role.class);
    for (ThreadCpu.Role role : ThreadCpu.Role.values()) {
      means.put(role, mean(rounds, first + role.ordinal()));
    }
    return means;
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
                + " endpoints each; medians over %d updates of one cluster's %s%s (CPU: the mean)%n%n",
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
    List<Ratio> shown = Ratio.shown(results);
    out.append("| measure |");
    results.forEach(r -> out.append(' ').append(r.setup()).append(" |"));
    shown.forEach(ratio -> out.append(' ').append(ratio.header).append(" |"));
    out.append('\n');
    out.append("| --- |").append(" ---: |".repeat(results.size() + shown.size())).append('\n');
    Ratio[] every = Ratio.values();
    Ratio upstream = Ratio.DIRECT_PROXY;
    row(out, results, shown, "every client's first state (s)", Result::syncSeconds, "%.1f", every);
    row(out, results, shown, "update reaches clients, p50 (ms)", Result::p50, "%.0f", every);
    row(out, results, shown, "update reaches clients, p99 (ms)", Result::p99, "%.0f", every);
    row(out, results, shown, "update reaches clients, max (ms)", Result::max, "%.0f", every);
    row(
        out,
        results,
        shown,
        "serving process CPU per update (s)",
        Result::serverCpuPerUpdate,
        "%.2f",
        every);
    row(
        out,
        results,
        shown,
        "… less the JIT compiler's: the steady state's (s)",
        r -> r.serverCpuPerUpdate() - r.serverCpuByRole().get(ThreadCpu.Role.JIT),
        "%.2f",
        every);
    for (ThreadCpu.Role role : ThreadCpu.Role.values()) {
      row(
          out,
          results,
          shown,
          "… of which " + role.description + " (s)",
          r -> r.serverCpuByRole().get(role),
          "%.3f",
          every);
    }
    row(
        out,
        results,
        shown,
        "control plane CPU per update behind the proxy (s)",
        Result::upstreamCpuPerUpdate,
        "%.2f");
    row(
        out,
        results,
        shown,
        "load generator CPU per update, same cores (s)",
        Result::clientsCpuPerUpdate,
        "%.2f");
    row(
        out,
        results,
        shown,
        "… its share: load generator CPU / serving process CPU",
        r -> r.serverCpuPerUpdate() > 0 ? r.clientsCpuPerUpdate() / r.serverCpuPerUpdate() : 0,
        "%.2f");
    row(
        out,
        results,
        shown,
        "serving process heap per stream (KiB)",
        r -> r.heapPerStream() / 1024,
        "%.1f",
        every);
    row(
        out,
        results,
        shown,
        "serving process RSS per stream (KiB)",
        r -> r.rssPerStream() / 1024,
        "%.1f",
        every);
    row(
        out,
        results,
        shown,
        "bytes to clients per update (KiB)",
        r -> r.bytesPerUpdate() / 1024,
        "%.0f",
        every);
    row(
        out,
        results,
        shown,
        "streams open on the control plane",
        r -> r.upstreamStreams(),
        "%.0f",
        upstream);
    row(
        out,
        results,
        shown,
        "control plane bytes sent per update (KiB)",
        r -> r.upstreamBytesPerUpdate() / 1024,
        "%.0f",
        upstream);
    row(out, results, shown, "client streams that failed", r -> r.failedStreams(), "%.0f");
    return out.toString();
  }

  /**
   * A ratio of two setups' figures, shown when both were measured: direct / proxy says how much the
   * proxy saves, proxy / floor how far the proxy is from what the transport alone costs.
   */
  enum Ratio {
    DIRECT_PROXY(Setup.DIRECT, Setup.PROXY, "direct / proxy", "%.1f×"),
    PROXY_FLOOR(Setup.PROXY, Setup.FLOOR, "proxy / floor", "%.2f×");

    final Setup numerator;
    final Setup denominator;
    final String header;
    final String format;

    Ratio(Setup numerator, Setup denominator, String header, String format) {
      this.numerator = numerator;
      this.denominator = denominator;
      this.header = header;
      this.format = format;
    }

    static List<Ratio> shown(List<Result> results) {
      List<Setup> measured = results.stream().map(Result::setup).toList();
      return java.util.Arrays.stream(values())
          .filter(r -> measured.contains(r.numerator) && measured.contains(r.denominator))
          .toList();
    }

    /** The ratio of {@code value} between the two setups, if it means anything. */
    Optional<Double> of(List<Result> results, java.util.function.ToDoubleFunction<Result> value) {
      double above = value.applyAsDouble(find(results, numerator));
      double below = value.applyAsDouble(find(results, denominator));
      return below > 0 ? Optional.of(above / below) : Optional.empty();
    }

    private static Result find(List<Result> results, Setup setup) {
      return results.stream().filter(r -> r.setup() == setup).findFirst().orElseThrow();
    }
  }

  /** A row of the table: each setup's figure, then the {@code ratios} of those {@code shown}. */
  private static void row(
      StringBuilder out,
      List<Result> results,
      List<Ratio> shown,
      String name,
      java.util.function.ToDoubleFunction<Result> value,
      String format,
      Ratio... ratios) {
    out.append("| ").append(name).append(" |");
    results.forEach(
        r ->
            out.append(' ')
                .append(String.format(Locale.ROOT, format, value.applyAsDouble(r)))
                .append(" |"));
    for (Ratio ratio : shown) {
      Optional<Double> of =
          List.of(ratios).contains(ratio) ? ratio.of(results, value) : Optional.empty();
      out.append(
          of.map(r -> String.format(Locale.ROOT, " " + ratio.format + " |", r)).orElse(" |"));
    }
    out.append('\n');
  }

  /**
   * Starts {@link BenchControlPlane} in its own JVM, on the CPUs {@code cpus} only ({@link
   * JavaProcess#start}; empty for any); {@link #readyPort} says where it listens.
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
        BenchControlPlane.class, "control plane", cpus, jvm, groups, clusters, change, log);
  }

  /**
   * Starts {@code main}, a server of the clients driven over stdin ({@link BenchControlPlane},
   * {@link BenchFloor}), in its own JVM.
   */
  private static JavaProcess startServer(
      Class<?> main,
      String name,
      String cpus,
      List<String> jvm,
      int groups,
      int clusters,
      BenchResources.Change change,
      Path log)
      throws IOException {
    return JavaProcess.start(
        name,
        cpus,
        jvm,
        List.of(
            "-cp",
            System.getProperty("java.class.path"),
            main.getName(),
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
   * Starts the proxy's jar in its own JVM, on the CPUs {@code cpus} only ({@link
   * JavaProcess#start}; empty for any), fed by the control plane on {@code planePort}; returns once
   * it is healthy.
   */
  static Proxy startProxy(Path jar, String cpus, List<String> jvm, int planePort, Path log)
      throws IOException, InterruptedException {
    // Ports chosen by the proxy's own bind, read from its "listening" line: a port found free here
    // first could be taken by another process (a test suite's clients) before the proxy binds it.
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
                "100000"),
            log);
    try {
      Main.Listening ports =
          Main.Listening.in(process.awaitContaining("listening for xDS", Duration.ofSeconds(60)))
              .orElseThrow();
      awaitHealthy(process, log, ports.monitoringPort(), Duration.ofSeconds(60));
      return new Proxy(process, ports.xdsPort(), ports.monitoringPort());
    } catch (RuntimeException | InterruptedException e) {
      process.close();
      throw e;
    }
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

  /** Nearest-rank percentile of sorted values. */
  static long percentile(long[] sorted, double quantile) {
    int rank = (int) Math.ceil(quantile * sorted.length);
    return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
  }

  /**
   * The mean of a cost over the rounds: what a GC or a compilation costs falls in some rounds and
   * not others, and a median would leave it out.
   */
  private static double mean(List<double[]> rounds, int column) {
    return rounds.stream().mapToDouble(r -> r[column]).average().orElse(0);
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
