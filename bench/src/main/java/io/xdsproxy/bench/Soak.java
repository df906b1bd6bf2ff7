package io.xdsproxy.bench;

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
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The soak: N clients on the proxy for a bounded time while the control plane keeps making updates
 * and clients keep dropping their connections and coming back as new clients. Every few seconds it
 * looks at what the proxy holds: heap after a full GC, live threads, open file descriptors, RSS,
 * and the streams it counts as open. Something kept per stream, per connection or per node id and
 * never freed shows as a slope. At the end one last update must reach every client, and no stream
 * may have failed but the ones the soak closed itself.
 *
 * <p>{@code java -cp bench/target/xds-bench.jar io.xdsproxy.bench.Soak [--clients N] [--groups G]
 * [--clusters K] [--delta SHARE] [--minutes M] [--updates-per-second U] [--churn-per-second C]
 * [--sample-seconds S] [--out DIR] [--proxy-jar PATH] [--jvm "OPTIONS"] [--logs DIR]
 * [--converge-seconds S]}; M, U, C and S may be fractional. Writes {@code soak.md} (the samples and
 * the verdict) and plots of them to {@code --out}; exits with 1 when the last update did not reach
 * every client, a stream failed, or the proxy's heap, threads or file descriptors grew.
 *
 * <p>A reconnecting client comes back with a new node id, as a restarted Envoy (a new pod) does:
 * the proxy must then let go of what it kept for the old id, which a soak with the same ids would
 * not show.
 */
public final class Soak {

  /**
   * The heap is flat when the median of the last third of the samples is at most this much above
   * that of the second third.
   */
  static final double HEAP_TOLERANCE = 0.15;

  private Soak() {}

  /** One run's options. */
  record Options(
      int clients,
      int groups,
      int clusters,
      double delta,
      double minutes,
      double updatesPerSecond,
      double churnPerSecond,
      double sampleSeconds,
      Path out,
      Path proxyJar,
      List<String> jvm,
      Path logs,
      Duration convergeTimeout) {

    static Options parse(String[] args) {
      Args given = new Args(args);
      Options options =
          new Options(
              given.integer("clients", 2000),
              given.integer("groups", 10),
              given.integer("clusters", 1000),
              given.decimal("delta", 0.5),
              given.decimal("minutes", 30),
              given.decimal("updates-per-second", 1),
              given.decimal("churn-per-second", 20),
              given.decimal("sample-seconds", 30),
              given.path("out", "bench/target/soak"),
              given.path("proxy-jar", "proxy-app/target/xds-proxy.jar"),
              given.words("jvm", "-Xmx4g -XX:+UseG1GC"),
              given.path("logs", "bench/target/logs"),
              given.seconds("converge-seconds", 120));
      given.done();
      if (options.groups > options.clients
          || options.minutes <= 0
          || options.sampleSeconds <= 0
          || options.updatesPerSecond < 0
          || options.churnPerSecond < 0) {
        throw new IllegalArgumentException(
            "need groups <= clients, minutes and sample-seconds above 0, rates not below 0");
      }
      return options;
    }

    double seconds() {
      return minutes * 60;
    }

    /**
     * How far the median of threads or file descriptors may rise and still be flat: a reconnecting
     * client holds a second connection for a moment, so a sample may catch about a second's churn
     * twice over.
     */
    long band() {
      return 10 + (long) Math.ceil(2 * churnPerSecond);
    }
  }

  /** One look at the proxy, {@code seconds} into the soak. */
  record Sample(
      double seconds, long heapBytes, long threads, long fds, long rssBytes, long streams) {}

  /**
   * One measure's median over the second third of the samples and over the last third, and whether
   * that is flat.
   */
  record Trend(String measure, double before, double after, boolean flat, String tolerance) {
    double ratio() {
      return before == 0 ? (after == 0 ? 1 : Double.POSITIVE_INFINITY) : after / before;
    }
  }

  /** What the soak saw; {@code holdingLast} is how many of the clients hold the last update. */
  record Report(
      List<Sample> samples,
      int updates,
      int reconnected,
      int clients,
      int holdingLast,
      Map<Integer, Long> roundsHeld,
      int failed,
      List<Trend> trends) {

    boolean converged() {
      return holdingLast == clients && failed == 0;
    }

    boolean flat() {
      return !trends.isEmpty() && trends.stream().allMatch(Trend::flat);
    }
  }

  public static void main(String[] args) throws Exception {
    Options options = Args.parseOrExit("xds-bench soak", args, Options::parse);
    Report report = run(options);
    System.out.println(markdown(options, report));
    System.exit(report.converged() && report.flat() ? 0 : 1);
  }

  static Report run(Options options) throws Exception {
    Files.createDirectories(options.logs());
    Files.createDirectories(options.out());
    try (JavaProcess plane =
        BenchServers.startControlPlane(
            "",
            options.jvm(),
            options.groups(),
            options.clusters(),
            BenchResources.Change.ENDPOINTS,
            options.logs().resolve("control-plane-soak.log"))) {
      BenchServers.Proxy proxy =
          BenchServers.startProxy(
              options.proxyJar(),
              "",
              options.jvm(),
              BenchServers.ready(plane).port(),
              BenchTls.OFF,
              options.logs().resolve("xds-proxy-soak.log"));
      try (JavaProcess proxyProcess = proxy.process();
          LoadClients clients =
              new LoadClients(
                  new InetSocketAddress("127.0.0.1", proxy.xdsPort()),
                  options.groups(),
                  options.clusters(),
                  options.delta(),
                  1,
                  BenchResources.Change.ENDPOINTS,
                  BenchTls.OFF)) {
        Compare.log("soak: opening %d clients", options.clients());
        clients.openUpTo(options.clients());
        Compare.await(
            () -> clients.holding(0),
            options.clients(),
            options.convergeTimeout(),
            "soak: every client's first state");
        Report report = soak(options, plane, proxy, clients);
        writePlots(options, report.samples());
        Files.writeString(options.out().resolve("soak.md"), markdown(options, report));
        return report;
      }
    }
  }

  private static Report soak(
      Options options, JavaProcess plane, BenchServers.Proxy proxy, LoadClients clients)
      throws Exception {
    List<Sample> samples = new ArrayList<>();
    HttpClient http = HttpClient.newHttpClient();
    int round = 0;
    int reconnected = 0;
    double nextSample = 0;
    long start = System.nanoTime();
    Compare.log(
        "soak: every client in sync; %.1f minutes of %.2f updates and %.1f reconnections a second",
        options.minutes(), options.updatesPerSecond(), options.churnPerSecond());
    for (double elapsed = 0;
        elapsed < options.seconds();
        elapsed = (System.nanoTime() - start) / 1e9) {
      // Counted from the start rather than from the last step, so that a slow sample is caught up
      // on.
      while (round < (int) (elapsed * options.updatesPerSecond())) {
        round = update(plane, clients);
      }
      int due = (int) (elapsed * options.churnPerSecond()) - reconnected;
      if (due > 0) {
        clients.reconnect(due);
        reconnected += due;
      }
      if (elapsed >= nextSample) {
        Sample sample = sample(proxy, http, elapsed);
        samples.add(sample);
        nextSample += options.sampleSeconds();
        Compare.log(
            "soak %s: %s; round %d, %d clients reconnected, %d streams failed",
            clock(elapsed), describe(sample), round, reconnected, clients.failed());
      }
      double next =
          Math.min(
              Math.min(nextSample, options.seconds()),
              Math.min(
                  at(round + 1, options.updatesPerSecond()),
                  at(reconnected + 1, options.churnPerSecond())));
      long sleepMillis = (long) ((next - (System.nanoTime() - start) / 1e9) * 1000);
      if (sleepMillis > 0) {
        Thread.sleep(sleepMillis);
      }
    }

    int last = update(plane, clients);
    long deadline = System.nanoTime() + options.convergeTimeout().toNanos();
    while (clients.holding(last) < clients.size() && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    int holding = clients.holding(last);
    Map<Integer, Long> roundsHeld = clients.roundsHeld();
    Compare.log(
        "soak: the last update (round %d) reached %d of %d clients (by round held: %s); %d streams failed",
        last, holding, clients.size(), roundsHeld, clients.failed());
    Sample end = sample(proxy, http, (System.nanoTime() - start) / 1e9);
    samples.add(end);
    Compare.log("soak at the end: %s", describe(end));
    return new Report(
        samples,
        last,
        reconnected,
        clients.size(),
        holding,
        roundsHeld,
        clients.failed(),
        trends(options, samples));
  }

  /**
   * When the {@code count}th event of a rate falls, in seconds from the start; never for a rate of
   * 0.
   */
  private static double at(int count, double perSecond) {
    return perSecond == 0 ? Double.POSITIVE_INFINITY : count / perSecond;
  }

  private static int update(JavaProcess plane, LoadClients clients) throws InterruptedException {
    plane.send("update");
    int round = Integer.parseInt(plane.await("updated ", Duration.ofSeconds(60)).split(" ")[1]);
    clients.roundMade(round);
    return round;
  }

  private static Sample sample(BenchServers.Proxy proxy, HttpClient http, double seconds)
      throws IOException, InterruptedException {
    JavaProcess process = proxy.process();
    long heap = process.heapAfterGcBytes();
    return new Sample(
        seconds,
        heap,
        process.threads(),
        process.openFileDescriptors(),
        process.rssBytes(),
        openStreams(http, proxy.monitoringPort()));
  }

  /**
   * The streams the proxy counts as open ({@code xds_downstream_streams}, over protocols and
   * services).
   */
  private static long openStreams(HttpClient http, int monitoringPort)
      throws IOException, InterruptedException {
    String metrics =
        http.send(
                HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + monitoringPort + "/metrics"))
                    .build(),
                HttpResponse.BodyHandlers.ofString())
            .body();
    return Math.round(
        metrics
            .lines()
            .filter(line -> line.startsWith("xds_downstream_streams{"))
            .mapToDouble(line -> Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
            .sum());
  }

  /**
   * The first third of the samples is warm-up (the JIT, the heap finding its size, the first
   * clients all being replaced once); the median of the last third is compared with that of the
   * second. Growth is what fails; a measure that falls is flat.
   */
  static List<Trend> trends(Options options, List<Sample> samples) {
    if (samples.size() < 3) {
      return List.of();
    }
    int third = samples.size() / 3;
    List<Sample> before = samples.subList(third, 2 * third);
    List<Sample> after = samples.subList(2 * third, samples.size());
    double heapBefore = median(before, s -> s.heapBytes() / 1048576.0);
    double heapAfter = median(after, s -> s.heapBytes() / 1048576.0);
    double threadsBefore = median(before, Sample::threads);
    double threadsAfter = median(after, Sample::threads);
    double fdsBefore = median(before, Sample::fds);
    double fdsAfter = median(after, Sample::fds);
    long band = options.band();
    return List.of(
        new Trend(
            "heap after GC (MiB)",
            heapBefore,
            heapAfter,
            heapAfter <= heapBefore * (1 + HEAP_TOLERANCE),
            String.format(Locale.ROOT, "at most %.0f %% higher", HEAP_TOLERANCE * 100)),
        new Trend(
            "threads",
            threadsBefore,
            threadsAfter,
            threadsAfter - threadsBefore <= band,
            "at most " + band + " more"),
        new Trend(
            "file descriptors",
            fdsBefore,
            fdsAfter,
            fdsAfter - fdsBefore <= band,
            "at most " + band + " more"));
  }

  private static double median(List<Sample> samples, ToDoubleFunction<Sample> measure) {
    double[] values = samples.stream().mapToDouble(measure).sorted().toArray();
    int middle = values.length / 2;
    return values.length % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
  }

  static String markdown(Options options, Report report) {
    StringBuilder out = new StringBuilder();
    out.append(
        String.format(
            Locale.ROOT,
            "%d clients (%.0f%% Delta, one connection each) in %d node groups, %d clusters;"
                + " %.1f minutes of %.2f updates a second and %.1f clients a second reconnecting as new ones (%d updates, %d"
                + " reconnections); the proxy sampled every %.0f s%n%n",
            options.clients(),
            options.delta() * 100,
            options.groups(),
            options.clusters(),
            options.minutes(),
            options.updatesPerSecond(),
            options.churnPerSecond(),
            report.updates(),
            report.reconnected(),
            options.sampleSeconds()));
    out.append(
        "| time (m:ss) | heap after GC (MiB) | threads | file descriptors | RSS (MiB) | open streams |\n");
    out.append("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (Sample s : report.samples()) {
      out.append(
          String.format(
              Locale.ROOT,
              "| %s | %.1f | %d | %d | %.0f | %d |%n",
              clock(s.seconds()),
              s.heapBytes() / 1048576.0,
              s.threads(),
              s.fds(),
              s.rssBytes() / 1048576.0,
              s.streams()));
    }
    out.append("\nThe last row is after the last update reached the clients, with no churn.\n\n");
    out.append(
        "| measure | median, second third | median, last third | last / second | flat when | |\n");
    out.append("| --- | ---: | ---: | ---: | --- | --- |\n");
    for (Trend t : report.trends()) {
      out.append(
          String.format(
              Locale.ROOT,
              "| %s | %.1f | %.1f | %.3f | %s | %s |%n",
              t.measure(),
              t.before(),
              t.after(),
              t.ratio(),
              t.tolerance(),
              t.flat() ? "flat" : "GREW"));
    }
    out.append(
        String.format(
            Locale.ROOT,
            "%nThe last update (round %d) reached %d of %d clients (clients by round held: %s);"
                + " %d streams failed other than those the soak closed.%n%nVerdict: %s, %s.%n",
            report.updates(),
            report.holdingLast(),
            report.clients(),
            report.roundsHeld(),
            report.failed(),
            report.converged() ? "converged" : "DID NOT CONVERGE",
            report.trends().isEmpty()
                ? "too few samples to judge flatness"
                : report.flat() ? "flat" : "NOT FLAT"));
    return out.toString();
  }

  private static void writePlots(Options options, List<Sample> samples) throws IOException {
    new Plot("xds-proxy memory during the soak", "minutes", "MiB")
        .series("heap after full GC", points(samples, s -> s.heapBytes() / 1048576.0))
        .series("RSS", points(samples, s -> s.rssBytes() / 1048576.0))
        .write(options.out().resolve("heap.png"));
    new Plot("xds-proxy live threads during the soak", "minutes", "threads")
        .series("threads", points(samples, Sample::threads))
        .write(options.out().resolve("threads.png"));
    new Plot("xds-proxy open file descriptors during the soak", "minutes", "count")
        .series("file descriptors", points(samples, Sample::fds))
        .series("open streams (the proxy's count)", points(samples, Sample::streams))
        .write(options.out().resolve("fds.png"));
  }

  private static List<double[]> points(List<Sample> samples, ToDoubleFunction<Sample> measure) {
    return samples.stream()
        .map(s -> new double[] {s.seconds() / 60, measure.applyAsDouble(s)})
        .toList();
  }

  private static String describe(Sample s) {
    return String.format(
        Locale.ROOT,
        "heap %.1f MiB, %d threads, %d fds, RSS %.0f MiB, %d streams",
        s.heapBytes() / 1048576.0,
        s.threads(),
        s.fds(),
        s.rssBytes() / 1048576.0,
        s.streams());
  }

  private static String clock(double seconds) {
    long whole = Math.round(seconds);
    return String.format(Locale.ROOT, "%d:%02d", whole / 60, whole % 60);
  }
}
