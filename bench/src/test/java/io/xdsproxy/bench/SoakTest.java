package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The soak run for a few seconds with a few clients: real processes, real churn. It shows that the
 * soak keeps working (clients that join late catch up, the samples and plots are written), not that
 * the proxy is flat, which a few seconds cannot tell.
 */
class SoakTest {

  @TempDir Path out;

  @Test
  void clientsThatReconnectCatchUpAndTheLastUpdateReachesEveryClient() throws Exception {
    Soak.Options options =
        Soak.Options.parse(
            new String[] {
              "--clients",
              "50",
              "--groups",
              "5",
              "--clusters",
              "20",
              "--minutes",
              "0.1",
              "--updates-per-second",
              "3",
              "--churn-per-second",
              "10",
              "--sample-seconds",
              "1",
              "--proxy-jar",
              "../proxy-app/target/xds-proxy.jar",
              "--jvm",
              "-Xmx256m",
              "--out",
              out.toString(),
              "--logs",
              out.toString(),
              "--converge-seconds",
              "30"
            });

    Soak.Report report = Soak.run(options);

    String markdown = Soak.markdown(options, report);
    assertThat(report.converged()).as(markdown).isTrue();
    assertThat(report.failed()).as(markdown).isZero();
    assertThat(report.reconnected())
        .as("clients reconnected during the soak")
        .isGreaterThanOrEqualTo(30);
    assertThat(report.updates()).as("updates made, the last one included").isGreaterThan(10);
    assertThat(report.samples())
        .as(markdown)
        .hasSizeGreaterThanOrEqualTo(3)
        .allSatisfy(
            sample -> {
              assertThat(sample.heapBytes()).isPositive();
              assertThat(sample.threads()).isPositive();
              assertThat(sample.fds()).as("at least one socket per connection").isGreaterThan(50);
            });
    assertThat(report.trends())
        .extracting(Soak.Trend::measure)
        .containsExactly("heap after GC (MiB)", "threads", "file descriptors");
    assertThat(markdown)
        .contains("| time (m:ss) | heap after GC (MiB) |")
        .contains("Verdict: converged");
    assertThat(out.resolve("soak.md")).exists();
    assertThat(out.resolve("heap.png")).exists();
    assertThat(out.resolve("threads.png")).exists();
    assertThat(out.resolve("fds.png")).exists();
  }
}
