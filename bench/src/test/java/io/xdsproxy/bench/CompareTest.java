package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The benchmark itself, run small: real processes (java-control-plane, the proxy's jar), real
 * clients. It shows that the comparison measures what it says, not how fast anything is.
 */
class CompareTest {

  @TempDir Path logs;

  @Test
  void bothSetupsConvergeAndTheProxyHoldsOneUpstreamStreamPerGroup() throws Exception {
    Compare.Options options =
        Compare.Options.parse(
            new String[] {
              "--clients",
              "30",
              "--groups",
              "3",
              "--clusters",
              "20",
              "--updates",
              "2",
              "--proxy-jar",
              "../proxy-app/target/xds-proxy.jar",
              "--jvm",
              "-Xmx256m",
              "--logs",
              logs.toString(),
              "--timeout-seconds",
              "60"
            });

    List<Compare.Result> results = Compare.run(options);

    assertThat(results).hasSize(2);
    Compare.Result direct = results.get(0);
    Compare.Result proxied = results.get(1);
    assertThat(direct.upstreamStreams())
        .as("the control plane serves every client itself")
        .isEqualTo(30);
    assertThat(proxied.upstreamStreams())
        .as("behind the proxy, one stream per node group")
        .isEqualTo(3);
    for (Compare.Result result : results) {
      assertThat(result.failedStreams()).as(result.setup()).isZero();
      assertThat(result.p50()).as(result.setup()).isPositive().isLessThanOrEqualTo(result.max());
      assertThat(result.bytesPerUpdate())
          .as("%s: the update reached the clients", result.setup())
          .isPositive();
    }
    assertThat(proxied.upstreamBytesPerUpdate())
        .as("the control plane sends each group's update once")
        .isLessThan(direct.upstreamBytesPerUpdate());
    assertThat(Compare.table(options, results))
        .contains("| update reaches clients, p99 (ms) |")
        .contains("| … its share: load generator CPU / serving process CPU |");
  }

  @Test
  void percentilesAreNearestRank() {
    long[] sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    assertThat(Compare.percentile(sorted, 0.5)).isEqualTo(5);
    assertThat(Compare.percentile(sorted, 0.99)).isEqualTo(10);
    assertThat(Compare.percentile(new long[] {7}, 0.99)).isEqualTo(7);
  }
}
