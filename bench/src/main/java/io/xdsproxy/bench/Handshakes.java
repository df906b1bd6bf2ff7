package io.xdsproxy.bench;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.ToDoubleFunction;

/**
 * What a mutual-TLS handshake costs the proxy, on each TLS provider of its xDS port ({@code
 * --tls-provider}): many fresh connections, each a full handshake with a client certificate of its
 * node group ({@link BenchTls}: the node id and group checked against it), one SotW request for the
 * clusters and its answer, then closed; the proxy's CPU time over them, from {@code /proc}. Then N
 * connections left open, each with its stream served, and the proxy's heap after a full GC and its
 * resident memory per connection: BoringSSL keeps a connection's TLS state outside the heap, so
 * only the resident memory compares the two.
 *
 * <p>{@code java -cp bench/target/xds-bench.jar io.xdsproxy.bench.Handshakes [--providers
 * off,jdk,openssl] [--connections N] [--concurrency C] [--repeats R] [--warmup W] [--idle I]
 * [--groups G] [--clusters K] [--proxy-jar PATH] [--jvm "OPTIONS"] [--logs DIR] [--timeout-seconds
 * S] [--proxy-cpus CPUS] [--others-cpus CPUS]}: for each provider in turn, a proxy of its own; W
 * connections to warm it (its JIT), then R rounds of N connections, C at a time, and the median of
 * the rounds; then I idle connections. {@code --proxy-cpus 0 --others-cpus 1} keeps the proxy on
 * one core and the clients on the other, so that handshakes per CPU-second are per core. {@code
 * off} among the providers is a proxy without TLS, whose connections cost the same but for TLS: the
 * table then says what TLS adds to each.
 */
public final class Handshakes {

  private static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

  /** What {@code --providers} calls a proxy without TLS: what a connection costs without it. */
  private static final String PLAINTEXT = "off";

  record Options(
      List<String> providers,
      int connections,
      int concurrency,
      int repeats,
      int warmup,
      int idle,
      int groups,
      int clusters,
      Path proxyJar,
      List<String> jvm,
      Path logs,
      Duration timeout,
      String proxyCpus,
      String othersCpus) {

    static Options parse(String[] args) {
      Args given = new Args(args);
      Options options =
          new Options(
              Arrays.asList(given.text("providers", "off,jdk,openssl").split(",")),
              given.integer("connections", 2000),
              given.integer("concurrency", 32),
              given.integer("repeats", 5),
              given.integer("warmup", 2000),
              given.integer("idle", 2000),
              given.integer("groups", 10),
              given.integer("clusters", 10),
              given.path("proxy-jar", "proxy-app/target/xds-proxy.jar"),
              given.words("jvm", "-Xmx2g -XX:+UseG1GC"),
              given.path("logs", "bench/target/logs"),
              given.seconds("timeout-seconds", 300),
              given.text("proxy-cpus", ""),
              given.text("others-cpus", ""));
      given.done();
      options.providers().stream()
          .filter(provider -> !provider.equals(PLAINTEXT))
          .forEach(io.xdsproxy.app.TlsProvider::of);
      return options;
    }
  }

  /**
   * What one provider measured: medians over the rounds of handshakes per second of the proxy's CPU
   * and of the wall clock; heap and resident memory per idle connection, in bytes.
   */
  record Result(
      String provider,
      double perCpuSecond,
      double perCpuSecondLessJit,
      double perSecond,
      double heapPerConnection,
      double rssPerConnection,
      int failed) {}

  private Handshakes() {}

  public static void main(String[] args) throws Exception {
    Options options = Args.parseOrExit("xds-bench handshakes", args, Options::parse);
    Files.createDirectories(options.logs());
    JavaProcess.pinThisProcess(options.othersCpus());
    List<Result> results = new ArrayList<>();
    for (String provider : options.providers()) {
      results.add(measure(options, provider));
    }
    System.out.println(table(options, results));
  }

  static Result measure(Options options, String provider) throws Exception {
    BenchTls tls =
        provider.equals(PLAINTEXT)
            ? BenchTls.OFF
            : BenchTls.parse(
                new Args(new String[] {"--tls", "mutual", "--tls-provider", provider}));
    Compare.log("connections, TLS %s: starting", provider);
    try (JavaProcess plane =
        BenchServers.startControlPlane(
            options.othersCpus(),
            options.jvm(),
            options.groups(),
            options.clusters(),
            BenchResources.Change.ENDPOINTS,
            options.logs().resolve("handshakes-control-plane.log"))) {
      BenchServers.Proxy proxy =
          BenchServers.startProxy(
              options.proxyJar(),
              options.proxyCpus(),
              options.jvm(),
              BenchServers.ready(plane).port(),
              tls,
              options.logs().resolve("handshakes-xds-proxy-" + provider + ".log"));
      String ran = proxy.tlsProvider().orElse(PLAINTEXT);
      EventLoopGroup loop = new NioEventLoopGroup(2);
      InetSocketAddress target = new InetSocketAddress("127.0.0.1", proxy.xdsPort());
      try (JavaProcess server = proxy.process()) {
        int failed = connectMany(target, tls, loop, options, options.warmup(), "warm-up");
        List<double[]> rounds = new ArrayList<>();
        for (int round = 1; round <= options.repeats(); round++) {
          Thread.sleep(1000); // the last round's connections are closed before the CPU is read
          double cpu = server.cpuSeconds();
          ThreadCpu threads = ThreadCpu.of(server.pid());
          long start = System.nanoTime();
          failed +=
              connectMany(target, tls, loop, options, options.connections(), "round " + round);
          double seconds = (System.nanoTime() - start) / 1e9;
          double used = server.cpuSeconds() - cpu;
          double jit = ThreadCpu.of(server.pid()).since(threads).get(ThreadCpu.Role.JIT);
          double[] measured = {
            options.connections() / used,
            options.connections() / (used - jit),
            options.connections() / seconds
          };
          Compare.log(
              "connections, TLS %s: round %d: %.0f per CPU-second (%.0f less the JIT), %.0f per"
                  + " second",
              ran, round, measured[0], measured[1], measured[2]);
          rounds.add(measured);
        }
        Thread.sleep(1000);
        long heapBase = server.heapAfterGcBytes();
        long rssBase = server.rssBytes();
        try (LoadClients idle =
            new LoadClients(
                target,
                options.groups(),
                options.clusters(),
                0.5,
                1,
                BenchResources.Change.ENDPOINTS,
                tls,
                "idle-")) {
          idle.openUpTo(options.idle());
          Compare.await(
              () -> idle.holding(0), options.idle(), options.timeout(), ran + ": idle connections");
          Thread.sleep(2000); // their last ACKs are read before the heap is
          double heap = Math.max(0, server.heapAfterGcBytes() - heapBase) / (double) options.idle();
          double rss = Math.max(0, server.rssBytes() - rssBase) / (double) options.idle();
          return new Result(
              ran,
              median(rounds, 0),
              median(rounds, 1),
              median(rounds, 2),
              heap,
              rss,
              failed + idle.failed());
        }
      } finally {
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      }
    }
  }

  /**
   * Opens {@code count} fresh connections, at most {@code --concurrency} at once, each asking for
   * the clusters once and closed when answered; returns how many failed.
   */
  private static int connectMany(
      InetSocketAddress target,
      BenchTls tls,
      EventLoopGroup loop,
      Options options,
      int count,
      String what)
      throws InterruptedException {
    Semaphore inFlight = new Semaphore(options.concurrency());
    CountDownLatch done = new CountDownLatch(count);
    AtomicInteger failed = new AtomicInteger();
    for (int i = 0; i < count; i++) {
      inFlight.acquire();
      int group = i % options.groups();
      ManagedChannel channel =
          NettyChannelBuilder.forAddress(target, tls.channel(group))
              .eventLoopGroup(loop)
              .channelType(NioSocketChannel.class)
              .directExecutor()
              .build();
      Runnable finish =
          () -> {
            channel.shutdownNow();
            inFlight.release();
            done.countDown();
          };
      StreamObserver<DiscoveryRequest> requests =
          AggregatedDiscoveryServiceGrpc.newStub(channel)
              .streamAggregatedResources(
                  new StreamObserver<>() {
                    private boolean answered;

                    @Override
                    public void onNext(DiscoveryResponse response) {
                      if (!answered) {
                        answered = true;
                        finish.run();
                      }
                    }

                    @Override
                    public void onError(Throwable t) {
                      if (!answered) {
                        answered = true;
                        failed.incrementAndGet();
                        finish.run();
                      }
                    }

                    @Override
                    public void onCompleted() {
                      onError(new IllegalStateException("ended unanswered"));
                    }
                  });
      requests.onNext(
          DiscoveryRequest.newBuilder()
              .setNode(
                  Node.newBuilder()
                      .setId(tls.nodeId(group, "handshake-" + i))
                      .setCluster(BenchControlPlane.groupName(group)))
              .setTypeUrl(CDS)
              .build());
    }
    if (!done.await(options.timeout().toSeconds(), TimeUnit.SECONDS)) {
      throw new IllegalStateException(
          what + ": " + done.getCount() + " of " + count + " connections unanswered");
    }
    if (failed.get() > 0) {
      Compare.log("%s: %d of %d connections failed", what, failed.get(), count);
    }
    return failed.get();
  }

  static String table(Options options, List<Result> results) {
    StringBuilder out =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "Connections to the proxy's xDS port, mutual TLS but for 'off': %d fresh connections"
                    + " a round, %d at once, each one full handshake (no resumption) and one SotW"
                    + " request for %d clusters; medians of %d rounds after %d warm-up connections."
                    + " Then %d idle connections, each with its stream served.%n%n",
                options.connections(),
                options.concurrency(),
                options.clusters(),
                options.repeats(),
                options.warmup(),
                options.idle()));
    if (!options.proxyCpus().isEmpty()) {
      out.append(
          String.format(
              Locale.ROOT,
              "The proxy on CPU(s) %s, the clients and the control plane on CPU(s) %s.%n%n",
              options.proxyCpus(),
              options.othersCpus().isEmpty() ? "any" : options.othersCpus()));
    }
    Optional<Result> plaintext =
        results.stream().filter(r -> r.provider().equals(PLAINTEXT)).findFirst();
    Optional<Result> jdk = results.stream().filter(r -> r.provider().equals("jdk")).findFirst();
    Optional<Result> openssl =
        results.stream().filter(r -> r.provider().equals("openssl")).findFirst();
    boolean ratio = jdk.isPresent() && openssl.isPresent();
    out.append("| measure |");
    results.forEach(r -> out.append(" TLS ").append(r.provider()).append(" |"));
    out.append(ratio ? " openssl / jdk |" : "")
        .append("\n| --- |")
        .append(" ---: |".repeat(results.size() + (ratio ? 1 : 0)))
        .append('\n');
    Map<String, ToDoubleFunction<Result>> rows = new LinkedHashMap<>();
    rows.put("connections per second of the proxy's CPU", Result::perCpuSecond);
    rows.put("… less the JIT compiler's CPU", Result::perCpuSecondLessJit);
    rows.put("connections per second, wall clock", Result::perSecond);
    rows.put("proxy CPU per connection (ms)", r -> 1000 / r.perCpuSecond());
    plaintext.ifPresent(
        off ->
            rows.put(
                "… of which TLS: more than without (ms)",
                r -> 1000 / r.perCpuSecond() - 1000 / off.perCpuSecond()));
    rows.put("heap per idle connection (KiB)", r -> r.heapPerConnection() / 1024);
    rows.put("resident memory per idle connection (KiB)", r -> r.rssPerConnection() / 1024);
    rows.put("connections that failed", Result::failed);
    rows.forEach(
        (name, value) -> {
          out.append("| ").append(name).append(" |");
          results.forEach(
              r -> out.append(String.format(Locale.ROOT, " %.2f |", value.applyAsDouble(r))));
          if (ratio) {
            double below = value.applyAsDouble(jdk.get());
            out.append(
                below > 0
                    ? String.format(
                        Locale.ROOT, " %.2f× |", value.applyAsDouble(openssl.get()) / below)
                    : " |");
          }
          out.append('\n');
        });
    return out.toString();
  }

  private static double median(List<double[]> rounds, int column) {
    double[] values = rounds.stream().mapToDouble(r -> r[column]).sorted().toArray();
    int middle = values.length / 2;
    return values.length % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
  }
}
