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

  /** With mutual TLS, as fleets run: plaintext is {@link CompareClusterChangeTest}'s. */
  @Test
  void everySetupConvergesAndTheProxyHoldsOneUpstreamStreamPerGroup() throws Exception {
    Compare.Options options =
        small(logs, "endpoints", "all", "--tls", "mutual", "--tls-provider", "openssl");

    List<Compare.Result> results = Compare.run(options);

    assertThat(results).extracting(Compare.Result::setup).containsExactly(Compare.Setup.values());
    Compare.Result direct = results.get(0);
    Compare.Result proxied = results.get(1);
    Compare.Result floor = results.get(2);
    assertThat(direct.upstreamStreams())
        .as("the control plane serves every client itself")
        .isEqualTo(30);
    assertThat(proxied.upstreamStreams())
        .as("behind the proxy, one stream per node group")
        .isEqualTo(3);
    assertThat(floor.upstreamStreams()).as("the floor serves every client itself").isEqualTo(30);
    for (Compare.Result result : results) {
      assertThat(result.failedStreams()).as(result.setup().label).isZero();
      assertThat(result.p50())
          .as(result.setup().label)
          .isPositive()
          .isLessThanOrEqualTo(result.max());
      assertThat(result.bytesPerUpdate())
          .as("%s: the update reached the clients", result.setup())
          .isPositive();
    }
    assertThat(proxied.upstreamBytesPerUpdate())
        .as("the control plane sends each group's update once")
        .isLessThan(direct.upstreamBytesPerUpdate());
    assertSameBytesPerUpdate(proxied, floor);
    for (Compare.Result result : results) {
      assertThat(result.tlsProvider()).as(result.setup().label).contains("openssl");
    }
    assertThat(CompareTable.of(options, results))
        .contains("TLS: mutual (provider openssl)")
        .contains("| update reaches clients, p99 (ms) |")
        .contains("| direct / proxy | proxy / floor |")
        .contains("| … its share: load generator CPU / serving process CPU |")
        .contains("| … of which the xDS port's event loops (s) |");
  }

  /**
   * The floor's responses are shaped as the proxy's: a client receives as many bytes per update
   * from either, within what their nonces and versions differ by.
   */
  static void assertSameBytesPerUpdate(Compare.Result proxied, Compare.Result floor) {
    assertThat(floor.bytesPerUpdate())
        .as("bytes to the clients per update, the floor's beside the proxy's")
        .isCloseTo(proxied.bytesPerUpdate(), org.assertj.core.data.Percentage.withPercentage(3));
  }

  /** The benchmark's options at a size for a test, its logs in {@code logs}. */
  static Compare.Options small(Path logs, String change, String mode, String... more) {
    List<String> args =
        new java.util.ArrayList<>(
            List.of(
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
                "60",
                "--change",
                change,
                "--mode",
                mode));
    args.addAll(List.of(more));
    return Compare.Options.parse(args.toArray(String[]::new));
  }

  @Test
  void percentilesAreNearestRank() {
    long[] sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    assertThat(Compare.percentile(sorted, 0.5)).isEqualTo(5);
    assertThat(Compare.percentile(sorted, 0.99)).isEqualTo(10);
    assertThat(Compare.percentile(new long[] {7}, 0.99)).isEqualTo(7);
  }
}
