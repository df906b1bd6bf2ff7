package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

class LimitedLogTest {

  private final AtomicLong now = new AtomicLong();
  private final LimitedLog log =
      new LimitedLog(LoggerFactory.getLogger(LimitedLogTest.class), Level.INFO, 3, Duration.ofSeconds(10), now::get);

  @Test
  void aStormIsCutToTheLimitAndTheNextLineCountsWhatWasLeftOut() {
    long[] storm = IntStream.range(0, 1000).mapToLong(i -> log.admit()).toArray();

    assertThat(storm).startsWith(0, 0, 0);
    assertThat(IntStream.range(3, 1000).mapToLong(i -> storm[i])).containsOnly(-1L);

    now.addAndGet(Duration.ofSeconds(10).toNanos());
    assertThat(log.admit()).as("the first line of the next period reports the storm").isEqualTo(997);
    assertThat(log.admit()).isZero();
  }

  @Test
  void linesWithinTheLimitAllGoThrough() {
    for (int period = 0; period < 5; period++) {
      assertThat(IntStream.range(0, 3).mapToLong(i -> log.admit())).containsOnly(0L);
      now.addAndGet(Duration.ofSeconds(11).toNanos());
    }
  }

  @Test
  void logsWithoutFailingWhenOverTheLimit() {
    IntStream.range(0, 10).forEach(i -> log.log("line {} of node '{}'", i, "n1"));
    now.addAndGet(Duration.ofSeconds(10).toNanos());
    log.log("after the storm");
    assertThat(log.admit()).isZero();
  }
}
