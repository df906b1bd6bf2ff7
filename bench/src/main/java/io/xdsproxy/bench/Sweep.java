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
 * {@link Compare} at several numbers of clients, or of node groups, with a table of each run, a CSV
 * and PNG plots of convergence time, CPU per update (less the JIT's) and memory against that number
 * for each setup measured: the control plane serving directly, the proxy and the floor ({@code
 * --mode}, all three unless told), and the slope of each.
 *
 * <p>{@code java -cp bench/target/xds-bench.jar io.xdsproxy.bench.Sweep [--over clients|groups]
 * --points 1000,5000,10000,20000 --out DIR [Compare's options]}: {@code --over groups} gives {@code
 * --groups} the points, at the {@code --clients} given (the control plane's CPU behind the proxy is
 * plotted too: what many groups cost it).
 */
public final class Sweep {

  private Sweep() {}

  public static void main(String[] args) throws Exception {
    List<String> rest = new ArrayList<>(Arrays.asList(args));
    Axis axis = Axis.valueOf(take(rest, "--over", "clients").toUpperCase(Locale.ROOT));
    int[] points =
        Arrays.stream(take(rest, "--points", "1000,5000,10000,20000").split(","))
            .mapToInt(Integer::parseInt)
            .toArray();
    Path out = Path.of(take(rest, "--out", "bench/target/sweep"));
    Files.createDirectories(out);
    Path csv = out.resolve("sweep.csv");
    Files.writeString(
        csv,
        axis.option
            + ",setup,p50_ms,p99_ms,max_ms,cpu_s,cpu_less_jit_s,control_plane_cpu_s,"
            + "heap_kib_per_stream,rss_kib_per_stream\n");
    Map<Compare.Setup, List<double[]>> p99 = new EnumMap<>(Compare.Setup.class);
    Map<Compare.Setup, List<double[]>> cpu = new EnumMap<>(Compare.Setup.class);
    Map<Compare.Setup, List<double[]>> heap = new EnumMap<>(Compare.Setup.class);
    List<double[]> planeBehindProxy = new ArrayList<>();
    for (int point : points) {
      List<String> pointArgs = new ArrayList<>(rest);
      pointArgs.addAll(List.of("--" + axis.option, Integer.toString(point)));
      Compare.Options options = Compare.Options.parse(pointArgs.toArray(String[]::new));
      List<Compare.Result> results = Compare.run(options);
      String table = CompareTable.of(options, results);
      System.out.println(table);
      Files.writeString(out.resolve(axis.option.charAt(0) + "" + point + ".md"), table);
      for (Compare.Result r : results) {
        double lessJit = r.serverCpuPerUpdate() - r.serverCpuByRole().get(ThreadCpu.Role.JIT);
        Files.writeString(
            csv,
            String.format(
                Locale.ROOT,
                "%d,%s,%.0f,%.0f,%.0f,%.2f,%.2f,%.2f,%.1f,%.1f%n",
                point,
                r.setup().name().toLowerCase(Locale.ROOT),
                r.p50(),
                r.p99(),
                r.max(),
                r.serverCpuPerUpdate(),
                lessJit,
                r.upstreamCpuPerUpdate(),
                r.heapPerStream() / 1024,
                r.rssPerStream() / 1024),
            java.nio.file.StandardOpenOption.APPEND);
        add(p99, r, point, r.p99() / 1000);
        add(cpu, r, point, lessJit);
        add(heap, r, point, r.heapPerStream() / 1024);
        if (r.setup() == Compare.Setup.PROXY) {
          planeBehindProxy.add(new double[] {point, r.upstreamCpuPerUpdate()});
        }
      }
      plot(
          axis,
          labelled(p99),
          "One change reaching every client (p99)",
          "seconds",
          out.resolve("convergence.png"));
      Map<String, List<double[]>> cpuCurves = labelled(cpu);
      if (axis == Axis.GROUPS && !planeBehindProxy.isEmpty()) {
        cpuCurves.put("control plane behind xds-proxy", planeBehindProxy);
      }
      plot(
          axis,
          cpuCurves,
          "CPU per update, less the JIT compiler's",
          "CPU seconds",
          out.resolve("cpu.png"));
      plot(
          axis,
          labelled(heap),
          "Serving process heap per client stream (after full GC)",
          "KiB per stream",
          out.resolve("memory.png"));
      String slopes = slopes(axis, p99, cpu, heap);
      System.out.println(slopes);
      Files.writeString(out.resolve("slopes.md"), slopes);
    }
  }

  /** What a sweep varies: the option it gives the points to, and the unit its slopes are in. */
  enum Axis {
    CLIENTS("clients", 1000, "per 1,000 clients"),
    GROUPS("groups", 100, "per 100 groups");

    final String option;
    final int per;
    final String unit;

    Axis(String option, int per, String unit) {
      this.option = option;
      this.per = per;
      this.unit = unit;
    }
  }

  /**
   * Each setup's slope against the axis, per {@link Axis#per} of it: of the least-squares line
   * through its points.
   */
  static String slopes(
      Axis axis,
      Map<Compare.Setup, List<double[]>> p99,
      Map<Compare.Setup, List<double[]>> cpu,
      Map<Compare.Setup, List<double[]>> heap) {
    StringBuilder table =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "| setup | p99, s %1$s | CPU per update less the JIT's, s %1$s"
                    + " | heap per stream, KiB %1$s |%n| --- | ---: | ---: | ---: |%n",
                axis.unit));
    for (Compare.Setup setup : p99.keySet()) {
      table.append(
          String.format(
              Locale.ROOT,
              "| %s | %.3f | %.3f | %.3f |%n",
              setup.label,
              axis.per * slope(p99.get(setup)),
              axis.per * slope(cpu.get(setup)),
              axis.per * slope(heap.get(setup))));
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
      Map<Compare.Setup, List<double[]>> curves, Compare.Result r, int x, double y) {
    curves.computeIfAbsent(r.setup(), setup -> new ArrayList<>()).add(new double[] {x, y});
  }

  private static Map<String, List<double[]>> labelled(Map<Compare.Setup, List<double[]>> curves) {
    Map<String, List<double[]>> labelled = new java.util.LinkedHashMap<>();
    curves.forEach((setup, points) -> labelled.put(setup.label, points));
    return labelled;
  }

  /** One curve per label, in the map's order. */
  private static void plot(
      Axis axis, Map<String, List<double[]>> curves, String title, String yLabel, Path file)
      throws java.io.IOException {
    Plot plot = new Plot(title, axis.option, yLabel);
    curves.forEach(plot::series);
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
