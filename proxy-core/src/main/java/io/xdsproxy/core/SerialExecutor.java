package io.xdsproxy.core;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs tasks one at a time, in order, on a shared pool: the owner of a node group's or a stream's
 * state, so that state reads as sequential code without locks (the model is grpc-java's
 * SynchronizationContext, but tasks run on the pool rather than on the caller's thread unless the
 * caller asks for that ({@link #executeHere}, which only a stream's cheap requests do), so no
 * network thread does a group's work). An owner may also have one standing task, which a {@link
 * #signal} runs once more.
 */
public final class SerialExecutor implements Executor {

  private static final Logger log = LoggerFactory.getLogger(SerialExecutor.class);

  /** Tasks run before giving the pool thread back, so one busy owner cannot starve the others. */
  private static final int BATCH = 64;

  /** {@link #draining} while no thread runs the tasks: thread ids start at 1. */
  private static final long NONE = 0;

  private final Executor pool;

  /** What the tasks belong to, for logs; its {@code toString} is made only when a line is. */
  private final Object owner;

  private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean scheduled = new AtomicBoolean();

  /**
   * The id of the thread running this executor's tasks while one does, else {@link #NONE}: what
   * {@link #assertCurrent} compares with. A number rather than the thread: an owner's executor
   * lives long and its tasks run on every update, and storing a reference into an old object is a
   * card G1 has to refine (issue 18, round five); storing a number is not.
   */
  private volatile long draining = NONE;

  /** What {@link #signal} has run; null when the owner has none. */
  private final Runnable standing;

  /** {@link #standing} is to run once more. */
  private volatile boolean signalled;

  public SerialExecutor(Executor pool, Object owner) {
    this(pool, owner, null);
  }

  /**
   * An executor whose owner signals {@code standing} ({@link #signal}) rather than queueing it: for
   * a task that only catches up with something and is asked for often.
   */
  public SerialExecutor(Executor pool, Object owner, Runnable standing) {
    this.pool = pool;
    this.owner = owner;
    this.standing = standing;
  }

  @Override
  public void execute(Runnable task) {
    tasks.add(task);
    schedule();
  }

  /**
   * Has the standing task given at construction run once more, after the tasks waiting now; signals
   * that come before it starts are one run. No task is queued: a flag is set, so signalling costs
   * no object and stores no reference (a stream is signalled on every update, and its executor is
   * old: a reference stored into it is a card for G1 to refine, issue 18, round five).
   */
  public void signal() {
    if (standing == null) {
      throw new IllegalStateException(owner + "'s executor has no standing task");
    }
    signalled = true;
    schedule();
  }

  /**
   * Runs {@code task} on this thread now if none of this executor's tasks runs or waits, else as
   * {@link #execute} does: for a caller whose thread may as well do the work, such as the event
   * loop a cheap request was read on, which would otherwise hand the task to a worker, waking one.
   */
  public void executeHere(Runnable task) {
    if (!tasks.isEmpty() || signalled || !scheduled.compareAndSet(false, true)) {
      execute(task);
      return;
    }
    draining = Thread.currentThread().getId();
    try {
      runOne(task);
    } finally {
      release();
    }
  }

  /**
   * Throws unless called from one of this executor's tasks: a confined method calls it on entry, so
   * that a call from the wrong thread fails at once rather than corrupting the owner's state (as
   * grpc-java's {@code SynchronizationContext.throwIfNotInThisSynchronizationContext}). One field
   * read.
   */
  public void assertCurrent() {
    if (draining != Thread.currentThread().getId()) {
      throw new IllegalStateException(
          "not running on the executor of "
              + owner
              + " (thread "
              + Thread.currentThread().getName()
              + ")");
    }
  }

  private void schedule() {
    if (scheduled.compareAndSet(false, true)) {
      try {
        pool.execute(this::drain);
      } catch (RejectedExecutionException e) {
        // Only a pool that is shutting down refuses work: the proxy is stopping, the tasks die with
        // it.
        log.debug("{}: {} task(s) dropped, the pool is shut down", owner, tasks.size());
        tasks.clear();
        signalled = false;
      }
    }
  }

  private void drain() {
    draining = Thread.currentThread().getId();
    try {
      for (int i = 0; i < BATCH; i++) {
        Runnable task = tasks.poll();
        if (task == null) {
          if (!signalled) {
            break;
          }
          signalled = false; // before it runs: a signal while it runs is one more run
          task = standing;
        }
        runOne(task);
      }
    } finally {
      release();
    }
  }

  private void runOne(Runnable task) {
    try {
      task.run();
    } catch (RuntimeException | Error e) {
      log.error("task of {} failed; its state may be inconsistent", owner, e);
    }
  }

  /** Lets the next run start, on whatever thread, and schedules it if tasks wait. */
  private void release() {
    draining = NONE;
    scheduled.set(false);
    if (!tasks.isEmpty() || signalled) {
      schedule();
    }
  }
}
