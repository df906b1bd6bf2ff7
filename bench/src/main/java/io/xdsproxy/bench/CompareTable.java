package io.xdsproxy.bench;

import io.xdsproxy.bench.Compare.Result;
import io.xdsproxy.bench.Compare.Setup;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/**
 * {@link Compare}'s Markdown table: a row per measure, a column per setup measured, then the ratios
 * direct / proxy and proxy / floor where both were measured; above it, the run's shape and its TLS.
 */
final class CompareTable {

  private CompareTable() {}

  /** The table of {@code results}, measured as {@code options} say. */
  static String of(Compare.Options options, List<Result> results) {
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
    out.append(
            options
                .tls()
                .describe(results.stream().flatMap(r -> r.tlsProvider().stream()).toList()))
        .append(
            options.proxyFlags().isEmpty()
                ? ""
                : "; the proxy started with " + String.join(" ", options.proxyFlags()))
        .append("\n\n");
    List<Ratio> shown = Ratio.shown(results);
    out.append("| measure |");
    results.forEach(r -> out.append(' ').append(r.setup()).append(" |"));
    shown.forEach(ratio -> out.append(' ').append(ratio.header).append(" |"));
    out.append('\n');
    out.append("| --- |").append(" ---: |".repeat(results.size() + shown.size())).append('\n');
    Ratio[] every = Ratio.values();
    Ratio upstream = Ratio.DIRECT_PROXY;
    row(out, results, shown, "every client's first state (s)", Result::syncSeconds, "%.1f", every);
    row(
        out,
        results,
        shown,
        "… serving process CPU meanwhile, less the JIT compiler's (s)",
        r -> r.firstStateCpu().serverLessJit(),
        "%.2f",
        every);
    byRole(
        out,
        results,
        shown,
        "… … of which ",
        List.of(ThreadCpu.Role.EVENT_LOOPS, ThreadCpu.Role.WORKERS, ThreadCpu.Role.GC),
        r -> r.firstStateCpu().serverByRole(),
        "%.2f");
    row(
        out,
        results,
        shown,
        "… load generator CPU meanwhile, same cores (s)",
        r -> r.firstStateCpu().clients(),
        "%.2f");
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
    byRole(
        out,
        results,
        shown,
        "… of which ",
        List.of(ThreadCpu.Role.values()),
        Result::serverCpuByRole,
        "%.3f");
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
    Optional<Double> of(List<Result> results, ToDoubleFunction<Result> value) {
      double above = value.applyAsDouble(find(results, numerator));
      double below = value.applyAsDouble(find(results, denominator));
      return below > 0 ? Optional.of(above / below) : Optional.empty();
    }

    private static Result find(List<Result> results, Setup setup) {
      return results.stream().filter(r -> r.setup() == setup).findFirst().orElseThrow();
    }
  }

  /** A row per role of {@code roles}: the CPU seconds {@code cpu} gives it, a ratio to each. */
  private static void byRole(
      StringBuilder out,
      List<Result> results,
      List<Ratio> shown,
      String prefix,
      List<ThreadCpu.Role> roles,
      Function<Result, Map<ThreadCpu.Role, Double>> cpu,
      String format) {
    for (ThreadCpu.Role role : roles) {
      row(
          out,
          results,
          shown,
          prefix + role.description + " (s)",
          r -> cpu.apply(r).getOrDefault(role, 0.0),
          format,
          Ratio.values());
    }
  }

  /** A row of the table: each setup's figure, then the {@code ratios} of those {@code shown}. */
  private static void row(
      StringBuilder out,
      List<Result> results,
      List<Ratio> shown,
      String name,
      ToDoubleFunction<Result> value,
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
}
