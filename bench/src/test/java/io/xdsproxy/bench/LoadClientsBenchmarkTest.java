package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The load generator's benchmark run once per response, outside JMH: both ways find the round the
 * response carries, so neither measures a search that gives up early.
 */
class LoadClientsBenchmarkTest {

  @Test
  void bothWaysFindTheRoundTheResponseCarries() throws Exception {
    for (String response : new String[] {"clusters", "endpoints"}) {
      LoadClientsBenchmark benchmark = new LoadClientsBenchmark();
      benchmark.response = response;
      benchmark.encodeResponse();

      assertThat(benchmark.scan()).as(response).isEqualTo(1);
      assertThat(benchmark.protobuf()).as(response).isEqualTo(1);
    }
  }
}
