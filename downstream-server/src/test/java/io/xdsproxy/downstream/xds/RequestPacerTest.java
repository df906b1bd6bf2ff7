package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.xdsproxy.core.testing.FakeClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The request rate of a stream, on a manual clock and timer: no real waits. */
class RequestPacerTest {

  private final FakeClock time = new FakeClock();

  /** The delays the pacer asked the timer for, in order; the tasks are run by the test. */
  private final List<Long> delays = new ArrayList<>();

  private final List<Runnable> scheduled = new ArrayList<>();
  private final List<Integer> pacedAt = new ArrayList<>();
  private int reads;

  private RequestPacer pacer(int rate) {
    return new RequestPacer(
        rate,
        time.clock(),
        (task, millis) -> {
          delays.add(millis);
          scheduled.add(task);
        },
        pacedAt::add);
  }

  private void next(RequestPacer pacer, int times) {
    for (int i = 0; i < times; i++) {
      pacer.next(() -> reads++);
    }
  }

  @Test
  void withoutARateEveryRequestIsReadAtOnce() {
    RequestPacer pacer = pacer(0);

    next(pacer, 10_000);

    assertThat(reads).isEqualTo(10_000);
    assertThat(delays).isEmpty();
    assertThat(pacedAt).isEmpty();
  }

  @Test
  void aBurstOfTwiceTheRatePassesAndTheNextWaitsExactlyForItsToken() {
    RequestPacer pacer = pacer(10);

    next(pacer, 20);
    assertThat(reads).as("twice the rate at once").isEqualTo(20);
    assertThat(delays).isEmpty();

    next(pacer, 2);
    assertThat(reads).as("past the burst, nothing is read at once").isEqualTo(20);
    assertThat(delays).as("one token per 100 ms at 10 a second").containsExactly(100L, 200L);

    scheduled.forEach(Runnable::run);
    assertThat(reads).as("the timer reads them when due").isEqualTo(22);
  }

  @Test
  void theStreamIsToldItIsPacedOnceWithTheRate() {
    RequestPacer pacer = pacer(10);

    next(pacer, 25);
    time.forwardTime(Duration.ofSeconds(10));
    next(pacer, 25);

    assertThat(pacedAt).containsExactly(10);
  }

  @Test
  void tokensComeBackAtTheRateUpToTwiceIt() {
    RequestPacer pacer = pacer(10);
    next(pacer, 20);

    time.forwardTime(Duration.ofSeconds(1));
    next(pacer, 10);
    assertThat(reads).as("a second gives 10 tokens").isEqualTo(30);
    assertThat(delays).isEmpty();

    time.forwardTime(Duration.ofMinutes(1));
    next(pacer, 21);
    assertThat(reads).as("a long pause gives no more than the burst").isEqualTo(50);
    assertThat(delays).containsExactly(100L);
  }
}
