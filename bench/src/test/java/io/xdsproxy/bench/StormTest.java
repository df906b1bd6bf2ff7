package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The storm run small: real processes (java-control-plane, the proxy's jar), real clients. It shows
 * that the scenario measures what it says (the newcomers come to hold the state made while they
 * connected, updates go on during the storm and are measured on the established clients only), not
 * how well the proxy absorbs a storm, which forty clients cannot tell; with mutual TLS too.
 */
class StormTest {

  @TempDir Path logs;

  /**
   * With mutual TLS, as fleets run, the newcomers' handshakes among the storm's work; the bench's
   * plaintext clients and proxy are CompareTest's and SoakTest's.
   */
  @Test
  void newcomersComeToHoldTheStateWhileUpdatesReachTheEstablishedClients() throws Exception {
    Storm.Options options =
        Storm.Options.parse(
            new String[] {
              "--clients",
              "20",
              "--storm",
              "40",
              "--groups",
              "2",
              "--clusters",
              "20",
              "--baseline-updates",
              "2",
              "--storm-updates",
              "2",
              "--interval-ms",
              "300",
              "--proxy-jar",
              "../proxy-app/target/xds-proxy.jar",
              "--jvm",
              "-Xmx256m",
              "--logs",
              logs.toString(),
              "--timeout-seconds",
              "60",
              "--tls",
              "mutual"
            });

    Storm.Result result = Storm.measure(options, options.proxyJars().get(0), 1);

    assertThat(result.failedStreams()).as(result.toString()).isZero();
    assertThat(result.stormSyncSeconds()).as("the newcomers' sync was timed").isPositive();
    assertThat(result.stormRounds())
        .as("updates made from the storm's start on")
        .isGreaterThanOrEqualTo(2);
    assertThat(result.baselineP50())
        .as("an update reached the established clients before the storm")
        .isPositive()
        .isLessThanOrEqualTo(result.baselineP99());
    assertThat(result.stormP50())
        .as("and during it")
        .isPositive()
        .isLessThanOrEqualTo(result.stormP99());
    assertThat(result.stormWorstP99())
        .as("the worst update during the storm")
        .isGreaterThanOrEqualTo(result.stormP99());
    assertThat(StormTable.of(options, java.util.List.of(result)))
        .contains("| newcomers all holding the state (s) |")
        .contains("| during the storm / before it, p99 (median of the runs' ratios) |")
        .contains("TLS: mutual (provider openssl)");
  }
}
