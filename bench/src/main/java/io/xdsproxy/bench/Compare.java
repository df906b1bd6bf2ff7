package io.xdsproxy.bench;

import java.net.InetSocketAddress;
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
 * [--proxy-flags "FLAGS"] [--logs DIR] [--timeout-seconds S] [--tls off|mutual] [--tls-provider
 * auto|openssl|jdk]}; {@code --mode} names the setups measured, in order: {@code direct}, {@code
 * proxy}, {@code floor}, or several separated by commas; {@code all} (the default) is all three,
 * {@code both} direct and proxy; {@code --warmup W} makes W updates before the U that are measured,
 * so that what is measured is the servers' steady state rather than their JIT compiling the update
 * path (the same for each setup); {@code --proxy-jvm} adds options to the proxy's JVM only, {@code
 * --proxy-flags} to its command line (e.g. {@code --upstream-protocol delta}); {@code --profile
 * DIR} writes a flight recording of the serving process over the updates (not the initial sync) to
 * DIR, and its heap by class once every client is in sync; with {@code --async-profiler LIB} (the
 * path of async-profiler's {@code libasyncProfiler.so}), a CPU profile of every thread, GC and
 * native frames included, instead. {@code --tls mutual} puts every setup's clients on mutual TLS,
 * the proxy with the node id check, the floor and the control plane serving directly with the same
 * TLS, on the provider {@code --tls-provider} names ({@link BenchTls}); the table's heading says
 * which ran.
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
      List<String> proxyFlags,
      Path logs,
      Duration timeout,
      Optional<Path> profile,
      Optional<Path> asyncProfiler,
      BenchResources.Change change,
      BenchTls tls) {

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
              given.words("proxy-flags", ""),
              given.path("logs", "bench/target/logs"),
              given.seconds("timeout-seconds", 600),
              given.optionalPath("profile"),
              given.optionalPath("async-profiler"),
              BenchResources.Change.valueOf(
                  given.text("change", "endpoints").toUpperCase(Locale.ROOT)),
              BenchTls.parse(given));
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
      FirstStateCpu firstStateCpu,
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
      int failedStreams,
      Optional<String> tlsProvider) {}

  /**
   * CPU spent while every client but the first of each group got its first state: the serving
   * process's, by thread role, and the load generator's on the same cores.
   */
  record FirstStateCpu(double server, Map<ThreadCpu.Role, Double> serverByRole, double clients) {
    double serverLessJit() {
      return server - serverByRole.getOrDefault(ThreadCpu.Role.JIT, 0.0);
    }
  }

  public static void main(String[] args) throws Exception {
    Options options = Args.parseOrExit("xds-bench", args, Options::parse);
    List<Result> results = run(options);
    System.out.println(CompareTable.of(options, results));
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
    // With TLS, what the clients connect to serves it: the proxy's link to its control plane is
    // plaintext.
    try (JavaProcess plane =
        BenchServers.startServer(
            setup == Setup.FLOOR ? BenchFloor.class : BenchControlPlane.class,
            setup == Setup.FLOOR ? "floor" : "control plane",
            "",
            options.jvm(),
            options.groups(),
            options.clusters(),
            options.change(),
            throughProxy ? BenchTls.OFF : options.tls(),
            options
                .logs()
                .resolve(
                    switch (setup) {
                      case DIRECT -> "control-plane-direct.log";
                      case PROXY -> "control-plane-upstream.log";
                      case FLOOR -> "floor.log";
                    }))) {
      BenchServers.Ready planeReady = BenchServers.ready(plane);
      int planePort = planeReady.port();
      Optional<String> tlsProvider = planeReady.tlsProvider();
      JavaProcess proxy = null;
      try {
        int port = planePort;
        if (throughProxy) {
          List<String> jvm = new ArrayList<>(options.jvm());
          jvm.addAll(options.proxyJvm());
          BenchServers.Proxy started =
              BenchServers.startProxy(
                  options.proxyJar(),
                  "",
                  jvm,
                  planePort,
                  options.tls(),
                  options.proxyFlags(),
                  options.logs().resolve("xds-proxy.log"));
          proxy = started.process();
          port = started.xdsPort();
          tlsProvider = started.tlsProvider();
        }
        JavaProcess server = throughProxy ? proxy : plane;
        try (LoadClients clients =
            new LoadClients(
                new InetSocketAddress("127.0.0.1", port),
                options.groups(),
                options.clusters(),
                options.delta(),
                options.streamsPerConnection(),
                options.change(),
                options.tls())) {
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
          double serverCpuBefore = server.cpuSeconds();
          ThreadCpu serverThreadsBefore = ThreadCpu.of(server.pid());
          double clientsCpuBefore = ownCpuSeconds();
          long responsesBefore = clients.responsesReceived();
          long bytesBefore = clients.bytesReceived();
          long start = System.nanoTime();
          clients.openUpTo(options.clients());
          await(
              () -> clients.holding(0),
              options.clients(),
              options.timeout(),
              setup + ": every client's first state");
          double syncSeconds = (System.nanoTime() - start) / 1e9;
          FirstStateCpu firstStateCpu =
              new FirstStateCpu(
                  server.cpuSeconds() - serverCpuBefore,
                  ThreadCpu.of(server.pid()).since(serverThreadsBefore),
                  ownCpuSeconds() - clientsCpuBefore);
          log(
              "%s: %d clients in sync after %.1f s%s, %d responses and %.1f MB received meanwhile",
              setup,
              options.clients(),
              syncSeconds,
              tlsProvider.map(p -> " (mutual TLS by " + p + ")").orElse(""),
              clients.responsesReceived() - responsesBefore,
              (clients.bytesReceived() - bytesBefore) / 1e6);
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
              firstStateCpu,
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
              clients.failed(),
              tlsProvider);
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
