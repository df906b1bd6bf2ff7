package io.xdsproxy.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@link Compare} at several numbers of clients, with a table of each run, a CSV and PNG plots of
 * convergence time, CPU per update and memory against N for each setup measured: the control plane
 * serving directly, the proxy and the floor ({@code --mode}, all three unless told).
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
    Map<Compare.Setup, List<double[]>> p99 = new EnumMap<>(Compare.Setup.class);
    Map<Compare.Setup, List<double[]>> cpu = new EnumMap<>(Compare.Setup.class);
    Map<Compare.Setup, List<double[]>> heap = new EnumMap<>(Compare.Setup.class);
    for (int clients : points) {
      List<String> pointArgs = new ArrayList<>(rest);
      pointArgs.addAll(List.of("--clients", Integer.toString(clients)));
      Compare.Options options = Compare.Options.parse(pointArgs.toArray(String[]::new));
      List<Compare.Result> results = Compare.run(options);
      String table = CompareTable.of(options, results);
      System.out.println(table);
      Files.writeString(out.resolve("n" + clients + ".md"), table);
      for (Compare.Result r : results) {
        Files.writeString(
            csv,
            String.format(
                Locale.ROOT,
                "%d,%s,%.0f,%.0f,%.0f,%.2f,%.1f,%.1f%n",
                clients,
                r.setup().name().toLowerCase(Locale.ROOT),
                r.p50(),
                r.p99(),
                r.max(),
                r.serverCpuPerUpdate(),
                r.heapPerStream() / 1024,
                r.rssPerStream() / 1024),
            java.nio.file.StandardOpenOption.APPEND);
        add(p99, r, clients, r.p99() / 1000);
        add(cpu, r, clients, r.serverCpuPerUpdate());
        add(heap, r, clients, r.heapPerStream() / 1024);
      }
      plot(
          p99, "One change reaching every client (p99)", "seconds", out.resolve("convergence.png"));
      plot(cpu, "Serving process CPU per update", "CPU seconds", out.resolve("cpu.png"));
      plot(
          heap,
          "Serving process heap per client stream (after full GC)",
          "KiB per stream",
          out.resolve("memory.png"));
      String slopes = slopes(p99, cpu, heap);
      System.out.println(slopes);
      Files.writeString(out.resolve("slopes.md"), slopes);
    }
  }

  /**
   * Each setup's slope against N, per 1,000 clients: of the least-squares line through its points.
   */
  static String slopes(
      Map<Compare.Setup, List<double[]>> p99,
      Map<Compare.Setup, List<double[]>> cpu,
      Map<Compare.Setup, List<double[]>> heap) {
    StringBuilder table =
        new StringBuilder(
            "| setup | p99, s per 1,000 clients | CPU per update, s per 1,000 clients"
                + " | heap per stream, KiB per 1,000 clients |\n| --- | ---: | ---: | ---: |\n");
    for (Compare.Setup setup : p99.keySet()) {
      table.append(
          String.format(
              Locale.ROOT,
              "| %s | %.3f | %.3f | %.3f |%n",
              setup.label,
              1000 * slope(p99.get(setup)),
              1000 * slope(cpu.get(setup)),
              1000 * slope(heap.get(setup))));
    }
    return table.toString();
  }

  /** The slope of the least-squares line through {@code points} ({x, y} each); 0 for one point. */
  static double slope(List<double[]> points) {
    double meanX = points.stream().mapToDouble(point -> point[0]).average().orElse(0);
    double meanY = points.stream().mapToDouble(point -> point[1]).average().orElse(0);
    double covariance = 0;
    double variance = 0;
    for (double[] point : points) {
      covariance += (point[0] - meanX) * (point[1] - meanY);
      variance += (point[0] - meanX) * (point[0] - meanX);
    }
    return variance == 0 ? 0 : covariance / variance;
  }

  private static void add(
      Map<Compare.Setup, List<double[]>> curves, Compare.Result r, int clients, double y) {
    curves.computeIfAbsent(r.setup(), setup -> new ArrayList<>()).add(new double[] {clients, y});
  }

  /** One curve per setup, in the order of {@link Compare.Setup}. */
  private static void plot(
      Map<Compare.Setup, List<double[]>> curves, String title, String yLabel, Path file)
      throws java.io.IOException {
    Plot plot = new Plot(title, "clients", yLabel);
    curves.forEach((setup, points) -> plot.series(setup.label, points));
    plot.write(file);
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
