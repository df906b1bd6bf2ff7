package io.xdsproxy.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.util.concurrent.EventExecutor;
import io.xdsproxy.core.Ticker;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The xDS port's event loops and their lag, on real Netty loops and a real timer: a loop held busy
 * shows as lag within a probe or two, and the tasks queued behind it as its backlog, and both go
 * back to next to none once it is free.
 */
class ServerEventLoopsTest {
  private final ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1);
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();

  @AfterEach
  void stopTimer() {
    timer.shutdownNow();
  }

  @Test
  void aLoopHeldBusyShowsAsLagAndBacklogAndStopsWhenItIsFree() throws Exception {
    try (ServerEventLoops loops = new ServerEventLoops(2, timer, Ticker.SYSTEM, meters)) {
      await("idle loops' lag").until(() -> loops.lagNanos() < millis(20));

      CountDownLatch release = new CountDownLatch(1);
      EventExecutor held = loops.group().next();
      held.execute(() -> awaitQuietly(release));
      for (int i = 0; i < 40; i++) {
        held.execute(() -> {});
      }
      try {
        await("a held loop's lag")
            .atMost(Duration.ofSeconds(10))
            .until(() -> loops.lagNanos() > millis(300));
        assertThat(loops.backlog())
            .as("the tasks queued behind the held one")
            .isGreaterThanOrEqualTo(40);
        assertThat(meters.get("xds.server.event.loop.lag").gauge().value())
            .as("seconds, as the metric has it")
            .isGreaterThan(0.3);
      } finally {
        release.countDown();
      }

      await("the loop's lag once it is free")
          .atMost(Duration.ofSeconds(10))
          .until(() -> loops.lagNanos() < millis(20) && loops.backlog() < 3);
    }
  }

  @Test
  void closingStopsTheLoopsAndTheProbes() {
    ServerEventLoops loops = new ServerEventLoops(2, timer, Ticker.SYSTEM, meters);
    loops.close();

    assertThat(loops.group().isTerminated()).isTrue();
    await("the probes stop").until(() -> timer.getQueue().isEmpty());
  }

  private static long millis(long millis) {
    return TimeUnit.MILLISECONDS.toNanos(millis);
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      latch.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
