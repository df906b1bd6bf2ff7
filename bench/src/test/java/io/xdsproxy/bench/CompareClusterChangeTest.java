package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CompareTest}'s benchmark run small with a Cluster change, in a class of its own so that
 * the module's second test JVM runs it beside the first's CompareTest.
 */
class CompareClusterChangeTest {

  @TempDir Path logs;

  /** In plaintext; the proxy's flags as given (--proxy-flags). */
  @Test
  void theFloorSendsAClusterChangeAsTheProxyDoes() throws Exception {
    Compare.Options options =
        CompareTest.small(
            logs, "cluster", "proxy,floor", "--proxy-flags", "--upstream-protocol sotw");
    List<Compare.Result> results = Compare.run(options);

    assertThat(results)
        .extracting(Compare.Result::setup)
        .containsExactly(Compare.Setup.PROXY, Compare.Setup.FLOOR);
    for (Compare.Result result : results) {
      assertThat(result.failedStreams()).as(result.setup().label).isZero();
    }
    CompareTest.assertSameBytesPerUpdate(results.get(0), results.get(1));
    assertThat(CompareTable.of(options, results))
        .contains("TLS: off; the proxy started with --upstream-protocol sotw");
  }
}
