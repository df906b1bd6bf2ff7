package io.xdsproxy.bench;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A reconnect storm while updates flow (issue 17): N clients are served by the proxy and take
 * updates one after another; then M new clients connect at once, as a zone failing over sends its
 * Envoys to this replica, and the updates go on. Reports how long until all M hold the state, and
 * the p50 and p99 of an update's fan-out to the N established clients before the storm and during
 * it, for each proxy jar given, one after the other on the same machine, so that a build before a
 * change and one after are compared in one run.
 *
 * <p>{@code java -cp bench/target/xds-bench.jar io.xdsproxy.bench.Storm [--clients N] [--storm M]
 * [--groups G] [--clusters K] [--delta SHARE] [--streams-per-connection S] [--baseline-updates B]
 * [--storm-updates U] [--pause-ms P | --interval-ms I] [--proxy-jar PATH[,PATH...]] [--runs R]
 * [--jvm "OPTIONS"] [--logs DIR] [--timeout-seconds S] [--proxy-cpus CPUS] [--others-cpus CPUS]
 * [--profile DIR] [--warmup-storm W] [--tls off|mutual] [--tls-provider auto|openssl|jdk]}: {@code
 * --storm-updates} is the fewest updates made from the storm's start on (more are made while the
 * newcomers are not all in sync). An update is made {@code --pause-ms} after the last one reached
 * every established client, or, with {@code --interval-ms}, every {@code I} ms whether the last has
 * reached them or not, each measured once they all hold it: at a fixed rate, a build whose updates
 * are faster does not make more of them, its newcomers do not pay for that work, and an update held
 * up by the storm does not hold up the next ones' making (with one after another, the first update
 * of a storm that took as long as the storm was its only one, and the median of the rest hid it).
 * Besides the medians, the worst p99 of an update during the storm. {@code --runs R} measures every
 * jar R times, alternating, and reports the medians.
 *
 * <p>{@code --proxy-cpus 0 --others-cpus 1} keeps the proxy on CPU 0 and the control plane and the
 * load generator (this JVM) on CPU 1 ({@code taskset -c}), so that the load generator decoding the
 * newcomers' first states does not take the proxy's CPU: what is measured is how the proxy orders
 * its own work, not how the kernel shares a machine among three busy processes. {@code --profile
 * DIR} writes a flight recording of the proxy from the storm's start until the newcomers are in
 * sync, one per jar and run ({@link ProfileSummary} reads it).
 *
 * <p>{@code --warmup-storm W}: before the established clients connect, W newcomers connect at once,
 * are served their state and leave, so that the measured storm meets a proxy whose newcomers' code
 * the JIT has compiled, as a replica that has served for a while has. Without it, the storm is the
 * first the proxy's JVM sees, and its compilers take about a third of the proxy's CPU while it
 * lasts (a proxy on one CPU, 10,000 newcomers: {@code /proc}'s per-thread times).
 *
 * <p>{@code --tls mutual}: every client, established or newcomer, connects with mutual TLS and its
 * group's certificate, and the proxy checks node ids and groups against it ({@link BenchTls}), so a
 * storm of M newcomers is M full handshakes on the proxy's cores.
 */
public final class Storm {

  record Options(
      int clients,
      int storm,
      int groups,
      int clusters,
      double delta,
      int streamsPerConnection,
      int baselineUpdates,
      int stormUpdates,
      Duration pause,
      Duration interval,
      List<Path> proxyJars,
      int runs,
      List<String> jvm,
      Path logs,
      Duration timeout,
      String proxyCpus,
      String othersCpus,
      Optional<Path> profile,
      int warmupStorm,
      int warmupStorms,
      Duration settle,
      BenchTls tls) {

    static Options parse(String[] args) {
      Args given = new Args(args);
      int clients = given.integer("clients", 10000);
      Options options =
          new Options(
              clients,
              given.integer("storm", clients),
              given.integer("groups", 10),
              given.integer("clusters", 1000),
              given.decimal("delta", 0.5),
              given.integer("streams-per-connection", 1),
              given.integer("baseline-updates", 5),
              given.integer("storm-updates", 3),
              Duration.ofMillis(given.integer("pause-ms", 200)),
              Duration.ofMillis(given.integer("interval-ms", 0)),
              Arrays.stream(given.text("proxy-jar", "proxy-app/target/xds-proxy.jar").split(","))
                  .map(Path::of)
                  .toList(),
              given.integer("runs", 1),
              given.words("jvm", "-Xmx4g -XX:+UseG1GC"),
              given.path("logs", "bench/target/logs"),
              given.seconds("timeout-seconds", 300),
              given.text("proxy-cpus", ""),
              given.text("others-cpus", ""),
              given.optionalPath("profile"),
              given.integer("warmup-storm", 0),
              given.integer("warmup-storms", 1),
              given.seconds("settle-seconds", 0),
              BenchTls.parse(given));
      given.done();
      if (options.groups() > options.clients() || options.baselineUpdates() < 1) {
        throw new IllegalArgumentException("need groups <= clients and a baseline update or more");
      }
      return options;
    }
  }

  /** One update's fan-out to the established clients, in milliseconds, and when it was made. */
  record Round(long madeAt, double p50, double p99, double max) {}

  /** What one run of one jar measured: medians over its rounds, in ms; the storm's sync in s. */
  record Result(
      Path jar,
      double stormSyncSeconds,
      double baselineP50,
      double baselineP99,
      double stormP50,
      double stormP99,
      double stormWorstP99,
      int stormRounds,
      int failedStreams,
      double proxyCpu,
      double othersCpu,
      Optional<String> tlsProvider) {}

  public static void main(String[] args) throws Exception {
    Options options = Args.parseOrExit("xds-bench storm", args, Options::parse);
    Files.createDirectories(options.logs());
    JavaProcess.pinThisProcess(options.othersCpus());
    List<Result> results = new ArrayList<>();
    for (int run = 1; run <= options.runs(); run++) {
      for (Path jar : options.proxyJars()) {
        Result result = measure(options, jar, run);
        Compare.log("%s", result);
        results.add(result);
      }
    }
    System.out.println(StormTable.of(options, results));
  }

  static Result measure(Options options, Path jar, int run) throws Exception {
    String setup = jar + " (run " + run + ")";
    Compare.log("%s: starting", setup);
    try (JavaProcess plane =
        BenchServers.startControlPlane(
            options.othersCpus(),
            options.jvm(),
            options.groups(),
            options.clusters(),
            BenchResources.Change.ENDPOINTS,
            options.logs().resolve("storm-control-plane.log"))) {
      int planePort = BenchServers.ready(plane).port();
      BenchServers.Proxy proxy =
          BenchServers.startProxy(
              jar,
              options.proxyCpus(),
              options.jvm(),
              planePort,
              options.tls(),
              options.logs().resolve("storm-xds-proxy.log"));
      try (JavaProcess proxyProcess = proxy.process();
          LoadClients established = clients(options, proxy, "established-");
          LoadClients storm = clients(options, proxy, "storm-")) {
        for (int i = 0; options.warmupStorm() > 0 && i < options.warmupStorms(); i++) {
          // Storms the proxy has seen before, so that the measured one finds the newcomers' code
          // compiled, as a replica that has served for a while does; their clients leave again.
          try (LoadClients warmup = clients(options, proxy, "warmup-" + i + "-")) {
            warmup.openUpTo(options.warmupStorm());
            Compare.await(
                () -> warmup.holding(0),
                options.warmupStorm(),
                options.timeout(),
                setup + ": the warm-up storm's clients holding the state");
          }
          Compare.log("%s: %d warm-up newcomers served and gone", setup, options.warmupStorm());
          Thread.sleep(options.settle().toMillis());
        }
        established.openUpTo(options.clients());
        Compare.await(
            () -> established.holding(0),
            options.clients(),
            options.timeout(),
            setup + ": the established clients' first state");
        Thread.sleep(2000); // their last ACKs are read before the updates start

        Rounds rounds = new Rounds(plane, established, storm, options);
        List<Round> baseline = new ArrayList<>();
        for (int i = 0; i < options.baselineUpdates(); i++) {
          baseline.add(rounds.reached(rounds.make()));
        }
        Compare.log("%s: baseline done, the storm begins", setup);

        // Updates go on, on a thread of their own, while the storm connects: at a fixed rate,
        // whether the last has reached the clients or not (measured once all hold them), or one
        // after another.
        int stateAtStorm = rounds.made();
        List<Made> made = new CopyOnWriteArrayList<>();
        List<Round> during = new CopyOnWriteArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Exception> failure = new AtomicReference<>();
        Thread updates =
            new Thread(
                () -> {
                  try {
                    while (!stop.get()) {
                      Made update = rounds.make();
                      made.add(update);
                      if (options.interval().isZero()) {
                        during.add(rounds.reached(update));
                      }
                    }
                  } catch (Exception e) {
                    failure.set(e);
                  }
                },
                "storm-updates");
        Optional<Path> recording =
            options
                .profile()
                .map(dir -> dir.resolve(jar.getFileName() + "-" + run + ".jfr").toAbsolutePath());
        if (recording.isPresent()) {
          Files.createDirectories(recording.get().getParent());
          proxyProcess.startRecording(recording.get());
        }
        double proxyCpuAt = proxyProcess.cpuSeconds();
        double othersCpuAt = plane.cpuSeconds() + JavaProcess.ownCpuSeconds();
        long stormAt = System.nanoTime();
        updates.start();
        storm.openUpTo(options.storm());
        Compare.await(
            () -> failure.get() != null ? options.storm() : storm.holding(stateAtStorm),
            options.storm(),
            options.timeout(),
            setup + ": the storm's clients holding the state");
        long syncedAt = System.nanoTime();
        double proxyCpu = (proxyProcess.cpuSeconds() - proxyCpuAt) / ((syncedAt - stormAt) / 1e9);
        double othersCpu =
            (plane.cpuSeconds() + JavaProcess.ownCpuSeconds() - othersCpuAt)
                / ((syncedAt - stormAt) / 1e9);
        if (recording.isPresent()) {
          proxyProcess.stopRecording();
        }
        double syncSeconds = (syncedAt - stormAt) / 1e9;
        Compare.log("%s: %d newcomers in sync after %.1f s", setup, options.storm(), syncSeconds);
        long deadline = System.nanoTime() + options.timeout().toNanos();
        while (failure.get() == null
            && made.size() < options.stormUpdates()
            && System.nanoTime() < deadline) {
          Thread.sleep(10);
        }
        stop.set(true);
        updates.join(options.timeout().toMillis());
        if (failure.get() != null) {
          throw failure.get();
        }
        if (!options.interval().isZero()) {
          for (Made update : made) {
            during.add(rounds.reached(update));
          }
        }
        // An update made while the newcomers were syncing, or the first ones from the storm's
        // start on when they synced faster than that.
        List<Round> stormRounds = new ArrayList<>();
        for (Round round : during) {
          if (round.madeAt() < syncedAt || stormRounds.size() < options.stormUpdates()) {
            stormRounds.add(round);
          }
        }
        return new Result(
            jar,
            syncSeconds,
            median(baseline.stream().mapToDouble(Round::p50).toArray()),
            median(baseline.stream().mapToDouble(Round::p99).toArray()),
            median(stormRounds.stream().mapToDouble(Round::p50).toArray()),
            median(stormRounds.stream().mapToDouble(Round::p99).toArray()),
            stormRounds.stream().mapToDouble(Round::p99).max().orElse(0),
            stormRounds.size(),
            established.failed() + storm.failed(),
            proxyCpu,
            othersCpu,
            proxy.tlsProvider());
      }
    }
  }

  private static LoadClients clients(Options options, BenchServers.Proxy proxy, String idPrefix) {
    return new LoadClients(
        new InetSocketAddress("127.0.0.1", proxy.xdsPort()),
        options.groups(),
        options.clusters(),
        options.delta(),
        options.streamsPerConnection(),
        BenchResources.Change.ENDPOINTS,
        options.tls(),
        idPrefix);
  }

  /** An update the control plane made: its round, when it changed, and when it was asked to. */
  record Made(int round, long changedAt, long madeAt, long late) {}

  /**
   * The control plane's updates: made {@code --pause-ms} after the last reached every established
   * client, or every {@code --interval-ms}; and how long each took to reach them.
   */
  private static final class Rounds {
    private final JavaProcess plane;
    private final LoadClients established;
    private final LoadClients storm;
    private final Options options;
    private volatile int made;
    private long nextDue = System.nanoTime();

    Rounds(JavaProcess plane, LoadClients established, LoadClients storm, Options options) {
      this.plane = plane;
      this.established = established;
      this.storm = storm;
      this.options = options;
    }

    int made() {
      return made;
    }

    /** Makes the next update when it is due, without waiting for it to reach anyone. */
    Made make() throws InterruptedException {
      if (options.interval().isZero()) {
        Thread.sleep(options.pause().toMillis());
      } else {
        long wait = nextDue - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
      }
      long due = nextDue;
      long madeAt = System.nanoTime();
      nextDue = madeAt + options.interval().toNanos();
      plane.send("update");
      String[] updated = plane.await("updated ", Duration.ofSeconds(60)).split(" ");
      int round = Integer.parseInt(updated[1]);
      established.roundMade(round);
      storm.roundMade(round);
      made = round;
      return new Made(
          round,
          Long.parseLong(updated[2]),
          madeAt,
          options.interval().isZero() ? 0 : Math.max(0, madeAt - due));
    }

    /** Waits until every established client holds {@code update}, and says how long it took. */
    Round reached(Made update) throws InterruptedException {
      Compare.await(
          () -> established.holding(update.round()),
          options.clients(),
          options.timeout(),
          "update " + update.round());
      long[] latencies = established.latencies(update.round(), update.changedAt());
      Round measured =
          new Round(
              update.madeAt(),
              Compare.percentile(latencies, 0.50) / 1e6,
              Compare.percentile(latencies, 0.99) / 1e6,
              latencies[latencies.length - 1] / 1e6);
      Compare.log(
          "update %d reached the established clients: p50 %.0f ms, p99 %.0f ms, max %.0f ms;"
              + " made %.0f ms after it was due",
          update.round(), measured.p50(), measured.p99(), measured.max(), update.late() / 1e6);
      return measured;
    }
  }

  static double median(double[] values) {
    if (values.length == 0) {
      return Double.NaN;
    }
    double[] sorted = values.clone();
    Arrays.sort(sorted);
    int middle = sorted.length / 2;
    return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  }
}
