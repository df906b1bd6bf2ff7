package io.xdsproxy.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * {@link Compare} at several numbers of clients, with a table of each run, a CSV and PNG plots of
 * convergence time and memory against N for the proxy and the control plane serving directly.
 *
 * <p>{@code java -cp bench/target/xds-bench.jar io.xdsproxy.bench.Sweep --points
 * 1000,5000,10000,20000 --out DIR [Compare's options]}
 */
public final class Sweep {

  private Sweep() {}

  public static void main(String[] args) throws Exception {
    List<String> rest = new ArrayList<>(Arrays.asList(args));
    int[] points =
        Arrays.stream(take(rest, "--points", "1000,5000,10000,20000").split(","))
            .mapToInt(Integer::parseInt)
            .toArray();
    Path out = Path.of(take(rest, "--out", "bench/target/sweep"));
    Files.createDirectories(out);
    Path csv = out.resolve("sweep.csv");
    Files.writeString(
        csv, "clients,setup,p50_ms,p99_ms,max_ms,cpu_s,heap_kib_per_stream,rss_kib_per_stream\n");
    List<double[]> directP99 = new ArrayList<>();
    List<double[]> proxyP99 = new ArrayList<>();
    List<double[]> directHeap = new ArrayList<>();
    List<double[]> proxyHeap = new ArrayList<>();
    for (int clients : points) {
      List<String> pointArgs = new ArrayList<>(rest);
      pointArgs.addAll(List.of("--clients", Integer.toString(clients)));
      Compare.Options options = Compare.Options.parse(pointArgs.toArray(String[]::new));
      List<Compare.Result> results = Compare.run(options);
      String table = Compare.table(options, results);
      System.out.println(table);
      Files.writeString(out.resolve("n" + clients + ".md"), table);
      for (Compare.Result r : results) {
        boolean proxy = r.setup().contains("proxy");
        Files.writeString(
            csv,
            String.format(
                Locale.ROOT,
                "%d,%s,%.0f,%.0f,%.0f,%.2f,%.1f,%.1f%n",
                clients,
                proxy ? "proxy" : "direct",
                r.p50(),
                r.p99(),
                r.max(),
                r.serverCpuPerUpdate(),
                r.heapPerStream() / 1024,
                r.rssPerStream() / 1024),
            java.nio.file.StandardOpenOption.APPEND);
        (proxy ? proxyP99 : directP99).add(new double[] {clients, r.p99() / 1000});
        (proxy ? proxyHeap : directHeap).add(new double[] {clients, r.heapPerStream() / 1024});
      }
      new Plot("One endpoint change reaching every client (p99)", "clients", "seconds")
          .series("java-control-plane direct", directP99)
          .series("through xds-proxy", proxyP99)
          .write(out.resolve("convergence.png"));
      new Plot(
              "Serving process heap per client stream (after full GC)", "clients", "KiB per stream")
          .series("java-control-plane direct", directHeap)
          .series("through xds-proxy", proxyHeap)
          .write(out.resolve("memory.png"));
    }
  }

  private static String take(List<String> args, String option, String fallback) {
    int at = args.indexOf(option);
    if (at < 0) {
      return fallback;
    }
    String value = args.get(at + 1);
    args.remove(at + 1);
    args.remove(at);
    return value;
  }
}
