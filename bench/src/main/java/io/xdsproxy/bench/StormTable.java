package io.xdsproxy.bench;

import io.xdsproxy.bench.Storm.Result;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.ToDoubleFunction;

/**
 * {@link Storm}'s Markdown table: a row per measure, a column per proxy jar (the median of its
 * runs), then each jar after the first over the first; above it, the run's shape and its TLS.
 */
final class StormTable {

  private StormTable() {}

  /** The table of {@code results}, measured as {@code options} say. */
  static String of(Storm.Options options, List<Result> results) {
    StringBuilder out = new StringBuilder();
    out.append(
        String.format(
            Locale.ROOT,
            "%d established clients, then %d newcomers at once (%.0f%% Delta, %d per connection),"
                + " %d node groups, %d clusters; an update of one cluster's endpoints %s;"
                + " medians of %d run(s)%n%n",
            options.clients(),
            options.storm(),
            options.delta() * 100,
            options.streamsPerConnection(),
            options.groups(),
            options.clusters(),
            options.interval().isZero()
                ? "every "
                    + options.pause().toMillis()
                    + " ms after the last reached every established client"
                : "every " + options.interval().toMillis() + " ms",
            options.runs()));
    if (!options.proxyCpus().isEmpty()) {
      out.append(
          String.format(
              Locale.ROOT,
              "The proxy on CPU(s) %s, the control plane and the load generator on CPU(s) %s.%n%n",
              options.proxyCpus(),
              options.othersCpus().isEmpty() ? "any" : options.othersCpus()));
    }
    out.append(
            options
                .tls()
                .describe(results.stream().flatMap(r -> r.tlsProvider().stream()).toList()))
        .append("\n\n");
    // A column per jar, then each jar after the first over the first.
    List<Path> jars = options.proxyJars();
    out.append("| measure |");
    jars.forEach(jar -> out.append(' ').append(jar).append(" |"));
    for (int i = 1; i < jars.size(); i++) {
      out.append(" ").append(i + 1).append(" / 1 |");
    }
    out.append("\n| --- |").append(" ---: |".repeat(2 * jars.size() - 1)).append('\n');
    row(out, options, results, "newcomers all holding the state (s)", Result::stormSyncSeconds);
    row(
        out,
        options,
        results,
        "update to established, before the storm, p50 (ms)",
        Result::baselineP50);
    row(
        out,
        options,
        results,
        "update to established, before the storm, p99 (ms)",
        Result::baselineP99);
    row(
        out,
        options,
        results,
        "update to established, during the storm, p50 (ms)",
        Result::stormP50);
    row(
        out,
        options,
        results,
        "update to established, during the storm, p99 (ms)",
        Result::stormP99);
    row(
        out,
        options,
        results,
        "during the storm / before it, p99 (median of the runs' ratios)",
        r -> r.stormP99() / r.baselineP99());
    row(
        out,
        options,
        results,
        "update to established, during the storm, worst p99 (ms)",
        Result::stormWorstP99);
    row(out, options, results, "updates during the storm", r -> r.stormRounds());
    row(out, options, results, "client streams that failed", r -> r.failedStreams());
    row(
        out,
        options,
        results,
        "CPUs the proxy used until the newcomers were in sync",
        Result::proxyCpu);
    row(
        out,
        options,
        results,
        "… the control plane and the load generator together",
        Result::othersCpu);
    return out.toString();
  }

  private static void row(
      StringBuilder out,
      Storm.Options options,
      List<Result> results,
      String name,
      ToDoubleFunction<Result> value) {
    out.append("| ").append(name).append(" |");
    List<Double> medians = new ArrayList<>();
    for (Path jar : options.proxyJars()) {
      double m =
          Storm.median(
              results.stream().filter(r -> r.jar().equals(jar)).mapToDouble(value).toArray());
      medians.add(m);
      out.append(String.format(Locale.ROOT, m < 10 ? " %.2f |" : " %.1f |", m));
    }
    for (int i = 1; i < medians.size(); i++) {
      out.append(
          medians.get(0) > 0
              ? String.format(Locale.ROOT, " %.2f |", medians.get(i) / medians.get(0))
              : " |");
    }
    out.append('\n');
  }
}
