package io.xdsproxy.upstream.grpc;

import io.grpc.Channel;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.random.RandomGenerator;

/**
 * What every {@link AdsSession} of one upstream shares: where it is (a control plane's addresses,
 * tried in turn, with a channel each), the proxy's threads and timings, and the rate its streams
 * start at.
 */
record SessionContext(
    List<Channel> channels,
    List<String> targets,
    Executor pool,
    ScheduledExecutorService timer,
    Backoff backoff,
    Duration notFoundTimeout,
    RandomGenerator random,
    MeterRegistry meters,
    StreamStarts starts) {

  /**
   * Runs {@code task} on {@code executor} after {@code delay}; false when the proxy's timer has
   * shut down already, as it does before its sessions' last callbacks (a stream ending as its
   * channel closes), so nothing was scheduled.
   */
  boolean later(Executor executor, Duration delay, Runnable task) {
    try {
      timer.schedule(() -> executor.execute(task), delay.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (RejectedExecutionException shuttingDown) {
      return false;
    }
  }
}
