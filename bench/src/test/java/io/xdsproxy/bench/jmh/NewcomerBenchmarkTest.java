package io.xdsproxy.bench.jmh;

import static org.assertj.core.api.Assertions.assertThat;

import io.xdsproxy.bench.BenchResources;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The newcomer benchmark run once, outside JMH: a newcomer is written the group's whole state of
 * both types, so what JMH times is a first state really built and encoded.
 */
class NewcomerBenchmarkTest {

  private final NewcomerBenchmark benchmark = new NewcomerBenchmark();
  private GroupOfStreams group;

  @AfterEach
  void disconnect() {
    if (group != null) {
      group.disconnect();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"sotw", "delta"})
  void aNewcomerIsWrittenEveryClusterThenEveryAssignment(String variant) throws Exception {
    group = new GroupOfStreams(5);
    group.variant = variant;
    group.connect();

    EnvoyClient first = (EnvoyClient) benchmark.newcomer(group);
    EnvoyClient second = (EnvoyClient) benchmark.newcomer(group);

    for (EnvoyClient newcomer : new EnvoyClient[] {first, second}) {
      RecordingCall<?> call = newcomer.call();
      assertThat(call.responses()).isEqualTo(2);
      assertThat(call.lastResponseHolds(group.latest().body().getValue().toByteArray()))
          .as("the EDS state holds cluster 0's assignment")
          .isTrue();
      assertThat(
              call.lastResponseHolds(
                  BenchResources.endpoints(GroupOfStreams.CLUSTERS - 1, 0).toByteArray()))
          .as("and the last cluster's")
          .isTrue();
      assertThat(
              call.responseBeforeLastHolds(
                  BenchResources.cluster(GroupOfStreams.CLUSTERS - 1, 0).toByteArray()))
          .as("the CDS state holds the last cluster")
          .isTrue();
    }
    assertThat(second.call().bytesWritten())
        .as("newcomers alike are written alike")
        .isEqualTo(first.call().bytesWritten());
  }
}
