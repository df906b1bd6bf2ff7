package io.xdsproxy.core.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class FakeClockTest {

  private final FakeClock time = new FakeClock();
  private final ScheduledExecutorService scheduler = time.scheduler();
  private final List<String> ran = new ArrayList<>();

  @Test
  void tasksRunWhenTimeReachesThemInTheOrderTheyAreDueWithTheClockAtTheirDueTime() {
    scheduler.schedule(() -> ran.add("b@" + time.nanos()), 20, TimeUnit.MILLISECONDS);
    scheduler.schedule(() -> ran.add("a@" + time.nanos()), 10, TimeUnit.MILLISECONDS);
    scheduler.schedule(() -> ran.add("c@" + time.nanos()), 30, TimeUnit.MILLISECONDS);

    assertThat(time.forwardTime(Duration.ofMillis(9))).isZero();
    assertThat(time.forwardTime(Duration.ofMillis(11))).isEqualTo(2);

    assertThat(ran).containsExactly("a@10000000", "b@20000000");
    assertThat(time.nanos()).isEqualTo(20_000_000L);
    assertThat(time.pendingDelays()).containsExactly(Duration.ofMillis(10));
  }

  @Test
  void aTaskScheduledByATaskRunsInTheSameForwardIfItFallsDueWithin() {
    scheduler.schedule(
        () -> {
          ran.add("first");
          scheduler.schedule(() -> ran.add("second"), 5, TimeUnit.MILLISECONDS);
          scheduler.schedule(() -> ran.add("too late"), 6, TimeUnit.MILLISECONDS);
        },
        5,
        TimeUnit.MILLISECONDS);

    time.forwardTime(Duration.ofMillis(10));

    assertThat(ran).containsExactly("first", "second");
    assertThat(time.pendingTasks()).isEqualTo(1);
  }

  @Test
  void aCancelledTaskNeverRuns() {
    ScheduledFuture<?> task = scheduler.schedule(() -> ran.add("x"), 1, TimeUnit.SECONDS);

    assertThat(task.cancel(false)).isTrue();
    time.forwardTime(Duration.ofSeconds(2));

    assertThat(ran).isEmpty();
    assertThat(task.isCancelled()).isTrue();
  }

  @Test
  void theWallClockMovesWithTheTicker() {
    Instant before = time.clock().instant();

    time.forwardTime(Duration.ofMinutes(3));

    assertThat(Duration.between(before, time.clock().instant())).isEqualTo(Duration.ofMinutes(3));
    assertThat(time.ticker().nanos()).isEqualTo(Duration.ofMinutes(3).toNanos());
  }
}
