package io.xdsproxy.core.testing;

import io.xdsproxy.core.Ticker;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Time that moves only when a test moves it, seen as a {@link Ticker}, a {@link Clock} and a {@link
 * ScheduledExecutorService} whose tasks run, on the test's thread, when {@link #forwardTime} passes
 * their due time: the timed rules (idle grace, not-found timeout, backoff, TTL) are tested to the
 * millisecond without waiting. grpc-java's {@code FakeClock} is the model.
 *
 * <p>Thread-safe: the code under test may schedule from its own threads while the test moves time.
 */
public final class FakeClock {

  private static final Instant START = Instant.parse("2026-01-01T00:00:00Z");

  private final PriorityQueue<Task> due = new PriorityQueue<>();
  private long nanos;
  private long sequence;
  private final Scheduler scheduler = new Scheduler();

  /** The monotonic time, in nanoseconds since this clock was made. */
  public synchronized long nanos() {
    return nanos;
  }

  public Ticker ticker() {
    return this::nanos;
  }

  /** Wall-clock time, starting at {@code 2026-01-01T00:00:00Z} and moving with {@link #nanos}. */
  public Clock clock() {
    return new WallClock();
  }

  /** A scheduler whose tasks run when {@link #forwardTime} reaches them; {@code execute} is now. */
  public ScheduledExecutorService scheduler() {
    return scheduler;
  }

  /**
   * Moves time on by {@code by}, running each task that becomes due, in the order of its due time
   * (then of scheduling), with the clock reading that due time while it runs. A task scheduled by
   * one that runs is run too if it falls due within {@code by}.
   *
   * @return how many tasks ran
   */
  public int forwardTime(Duration by) {
    long until;
    synchronized (this) {
      until = nanos + by.toNanos();
    }
    int ran = 0;
    for (Task next = nextDue(until); next != null; next = nextDue(until)) {
      next.run();
      ran++;
    }
    synchronized (this) {
      nanos = Math.max(nanos, until);
    }
    return ran;
  }

  /** Runs the tasks due now, such as those given to {@code execute}, without moving time. */
  public int runDueTasks() {
    return forwardTime(Duration.ZERO);
  }

  /** How long from now each pending task is due in, soonest first. */
  public synchronized List<Duration> pendingDelays() {
    List<Task> pending = new ArrayList<>(due);
    pending.sort(null);
    return pending.stream().map(task -> Duration.ofNanos(task.dueAt - nanos)).toList();
  }

  /** How many tasks wait to fall due (cancelled ones are gone). */
  public synchronized int pendingTasks() {
    return due.size();
  }

  private synchronized Task nextDue(long until) {
    Task first = due.peek();
    if (first == null || first.dueAt > until) {
      return null;
    }
    due.poll();
    nanos = Math.max(nanos, first.dueAt);
    return first;
  }

  private synchronized Task add(Callable<?> callable, long delayNanos) {
    if (scheduler.shutdown) {
      throw new RejectedExecutionException("the fake scheduler is shut down");
    }
    Task task = new Task(callable, nanos + Math.max(0, delayNanos), sequence++);
    due.add(task);
    return task;
  }

  private synchronized boolean remove(Task task) {
    return due.remove(task);
  }

  private final class Task implements ScheduledFuture<Object>, Runnable {
    private final Callable<?> callable;
    private final long dueAt;
    private final long order;
    private boolean done;
    private boolean cancelled;
    private Object result;
    private Throwable failure;

    Task(Callable<?> callable, long dueAt, long order) {
      this.callable = callable;
      this.dueAt = dueAt;
      this.order = order;
    }

    @Override
    public void run() {
      try {
        result = callable.call();
      } catch (Throwable t) {
        failure = t;
      }
      synchronized (FakeClock.this) {
        done = true;
      }
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(dueAt - nanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed other) {
      Task that = (Task) other;
      return dueAt != that.dueAt
          ? Long.compare(dueAt, that.dueAt)
          : Long.compare(order, that.order);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      synchronized (FakeClock.this) {
        if (done || cancelled) {
          return false;
        }
        cancelled = remove(this);
        return cancelled;
      }
    }

    @Override
    public boolean isCancelled() {
      synchronized (FakeClock.this) {
        return cancelled;
      }
    }

    @Override
    public boolean isDone() {
      synchronized (FakeClock.this) {
        return done || cancelled;
      }
    }

    @Override
    public Object get() throws ExecutionException {
      if (!isDone()) {
        throw new IllegalStateException("not due yet: move the fake clock on");
      }
      if (failure != null) {
        throw new ExecutionException(failure);
      }
      return result;
    }

    @Override
    public Object get(long timeout, TimeUnit unit) throws ExecutionException {
      return get();
    }
  }

  private final class Scheduler extends AbstractExecutorService
      implements ScheduledExecutorService {
    private volatile boolean shutdown;

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
      return add(Executors.callable(command), unit.toNanos(delay));
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
      @SuppressWarnings("unchecked")
      ScheduledFuture<V> task = (ScheduledFuture<V>) add(callable, unit.toNanos(delay));
      return task;
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(
        Runnable command, long initialDelay, long period, TimeUnit unit) {
      throw new UnsupportedOperationException("no periodic tasks on the fake clock yet");
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(
        Runnable command, long initialDelay, long delay, TimeUnit unit) {
      throw new UnsupportedOperationException("no periodic tasks on the fake clock yet");
    }

    @Override
    public void execute(Runnable command) {
      schedule(command, 0, TimeUnit.NANOSECONDS);
    }

    @Override
    public void shutdown() {
      shutdown = true;
    }

    @Override
    public List<Runnable> shutdownNow() {
      shutdown = true;
      synchronized (FakeClock.this) {
        List<Runnable> dropped = new ArrayList<>(due);
        due.clear();
        return dropped;
      }
    }

    @Override
    public boolean isShutdown() {
      return shutdown;
    }

    @Override
    public boolean isTerminated() {
      return shutdown;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
      return shutdown;
    }
  }

  private final class WallClock extends Clock {
    @Override
    public Instant instant() {
      return START.plusNanos(nanos());
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      throw new UnsupportedOperationException();
    }
  }
}
