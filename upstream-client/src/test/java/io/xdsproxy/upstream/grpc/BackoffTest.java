package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;

class BackoffTest {

  private static RandomGenerator always(double value) {
    return new RandomGenerator() {
      @Override
      public long nextLong() {
        return 0;
      }

      @Override
      public double nextDouble() {
        return value;
      }
    };
  }

  @Test
  void withoutJitterTheDelayDoublesUpToTheMaximum() {
    RandomGenerator middle = always(0.5);

    assertThat(
            java.util.stream.IntStream.rangeClosed(1, 10)
                .mapToObj(attempt -> Backoff.DEFAULT.delay(attempt, middle).toMillis())
                .toList())
        .containsExactly(
            500L, 1_000L, 2_000L, 4_000L, 8_000L, 16_000L, 30_000L, 30_000L, 30_000L, 30_000L);
  }

  @Test
  void jitterSpreadsADelayByAtMostTwentyPercentEitherWay() {
    assertThat(Backoff.DEFAULT.delay(3, always(0.0))).isEqualTo(Duration.ofMillis(1_600));
    assertThat(Backoff.DEFAULT.delay(3, always(Math.nextDown(1.0))))
        .isEqualTo(Duration.ofMillis(2_400));
    SplittableRandom random = new SplittableRandom(16);
    for (int i = 0; i < 10_000; i++) {
      assertThat(Backoff.DEFAULT.delay(20, random).toMillis()).isBetween(24_000L, 36_000L);
    }
  }
}
