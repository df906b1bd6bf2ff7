package io.xdsproxy.core;

import java.util.AbstractQueue;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The worker pool's queue, in two lanes, so that a reconnect storm does not delay updates to the
 * clients already served: "change" work (an update's fan-out to streams that hold their state, the
 * groups' and upstream sessions' work, gRPC's callbacks for those streams) is taken ahead of
 * "initial" work (a new stream's first requests, read and parsed, the first responses it is owed,
 * and its client's answers to them), queued with {@link #initial}. Within a lane, first in first
 * out.
 *
 * <p>The lanes share the workers' <em>time</em>, not their turns: while both have work, the initial
 * lane gets at most {@value #INITIAL_SHARE_PERCENT} % of it, so newcomers always progress and are
 * never starved, and an update's fan-out takes at most 1 / (1 − share) of its time alone; while one
 * lane is empty the other gets every worker. (Turns were not enough: a newcomer's turn, a whole
 * first state built and written, costs some hundred times an update's turn to one stream.) Every
 * task handed out is timed on the injected {@link Ticker}, two readings, and charged to its lane:
 * weighted fair queueing over one balance, the initial lane's time less a quarter of the change
 * lane's (at a 20 % share), each task's expected cost charged when it is taken (so that several
 * workers do not all take initial work at once) and corrected when it ends. The next task is the
 * change lane's unless the balance says the initial lane is behind its share. A lane's account
 * banks no credit: while a lane is empty, the balance is not left in its favour, and the initial
 * lane is never owed more than one of its tasks, however long a change task ran, so neither an idle
 * spell nor one slow task lets one lane run ahead of the other afterwards.
 *
 * <p>A task's cost is what its owner runs in one go ({@link SerialExecutor} runs up to 64 of its
 * tasks per turn).
 *
 * <p>Given to a {@link java.util.concurrent.ThreadPoolExecutor} as its work queue: thread-safe, one
 * lock, as {@link java.util.concurrent.ArrayBlockingQueue}; unbounded, as the pool's queue was. A
 * task ending settles its time without the lock (one atomic add).
 */
public final class WorkLanes extends AbstractQueue<Runnable> implements BlockingQueue<Runnable> {

  /**
   * The initial lane's most of the workers' time while the change lane has work, in percent. 20: an
   * update's fan-out then takes at most 1.25 times its time alone (the goal is within 1.5 times
   * during a storm, with room left for Netty's event loops and GC, which the lanes do not order),
   * and a storm's newcomers are still served at a fifth of the pool's speed while updates go on.
   */
  public static final int INITIAL_SHARE_PERCENT = 20;

  /** What one nanosecond of an initial task adds to the balance. */
  private static final long INITIAL_WEIGHT = 100 - INITIAL_SHARE_PERCENT;

  /** What one nanosecond of a change task takes off the balance. */
  private static final long CHANGE_WEIGHT = INITIAL_SHARE_PERCENT;

  /** A task of the initial lane: how the queue tells the lanes apart. */
  private record Initial(Runnable task) implements Runnable {
    @Override
    public void run() {
      task.run();
    }
  }

  /** A task handed to a worker: runs it, timed, and settles its lane's account for it. */
  private final class Timed implements Runnable {
    private final Runnable task;
    private final boolean initial;
    private final long charged;

    Timed(Runnable task, boolean initial, long charged) {
      this.task = task;
      this.initial = initial;
      this.charged = charged;
    }

    @Override
    public void run() {
      long start = ticker.nanos();
      try {
        task.run();
      } finally {
        ran(initial, charged, Math.max(1, ticker.nanos() - start));
      }
    }
  }

  private final Ticker ticker;
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition notEmpty = lock.newCondition();
  private final ArrayDeque<Runnable> change = new ArrayDeque<>();
  private final ArrayDeque<Runnable> initial = new ArrayDeque<>();

  /**
   * The initial lane's time times {@link #INITIAL_WEIGHT} less the change lane's times {@link
   * #CHANGE_WEIGHT}, as charged when tasks were taken: above zero, the initial lane has had more
   * than its share. Guarded by the lock.
   */
  private long balance;

  /** Corrections to {@link #balance} from tasks that ended, not yet folded into it. */
  private final AtomicLong unsettled = new AtomicLong();

  /**
   * The time a task of each lane took, lately (a moving average, nanoseconds): what a task is
   * charged when it is taken. Written by the workers as their tasks end, without the lock; a lost
   * update only makes the next charge a little off, and the correction settles it.
   */
  private volatile long initialCost;

  private volatile long changeCost;

  /** A queue whose tasks are timed on {@code ticker}: {@link Ticker#SYSTEM} in production. */
  public WorkLanes(Ticker ticker) {
    this.ticker = ticker;
  }

  /**
   * {@code task}, to be queued in the initial lane of a pool whose queue this is; run as it is by
   * any other executor (a test's direct one, a benchmark's).
   */
  public static Runnable initial(Runnable task) {
    return new Initial(task);
  }

  /** A task of the initial lane or the change lane, charged {@code charged}, took {@code took}. */
  private void ran(boolean fromInitial, long charged, long took) {
    if (fromInitial) {
      unsettled.addAndGet((took - charged) * INITIAL_WEIGHT);
      long cost = initialCost;
      initialCost = cost + (took - cost) / 8;
    } else {
      unsettled.addAndGet((charged - took) * CHANGE_WEIGHT);
      long cost = changeCost;
      changeCost = cost + (took - cost) / 8;
    }
  }

  /** Tasks waiting in the initial lane. */
  public int initialQueued() {
    lock.lock();
    try {
      return initial.size();
    } finally {
      lock.unlock();
    }
  }

  /** Tasks waiting in the change lane. */
  public int changeQueued() {
    lock.lock();
    try {
      return change.size();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public boolean offer(Runnable task) {
    if (task == null) {
      throw new NullPointerException();
    }
    lock.lock();
    try {
      (task instanceof Initial ? initial : change).add(task);
      notEmpty.signal();
      return true;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public void put(Runnable task) {
    offer(task);
  }

  @Override
  public boolean offer(Runnable task, long timeout, TimeUnit unit) {
    return offer(task);
  }

  /**
   * The balance with the ended tasks' corrections folded in, and no lane's credit kept that the
   * rules do not allow; the caller holds the lock.
   */
  private long settled(long corrections) {
    long settled = balance + corrections;
    if (initial.isEmpty()) {
      settled = Math.max(settled, 0); // an idle initial lane banks nothing
    }
    if (change.isEmpty()) {
      settled = Math.min(settled, 0); // nor does an idle change lane
    }
    // Owed at most one initial task, however long the change lane's last tasks ran.
    return Math.max(settled, -INITIAL_WEIGHT * Math.max(1, initialCost));
  }

  /** Whether the next task is the initial lane's, at {@code balance}; the caller holds the lock. */
  private boolean initialsTurn(long balance) {
    return !initial.isEmpty() && (change.isEmpty() || balance < 0);
  }

  /** The next task by the lanes' rule, timed and charged; the caller holds the lock. */
  private Runnable next() {
    balance = settled(unsettled.getAndSet(0));
    if (initialsTurn(balance)) {
      long charge = initialCost;
      balance += charge * INITIAL_WEIGHT;
      return new Timed(((Initial) initial.poll()).task(), true, charge);
    }
    Runnable task = change.poll();
    if (task == null || initial.isEmpty()) {
      // Nothing to share the workers with: the task runs as it is, untimed, and an idle initial
      // lane banks nothing of it. The steady state, updates only, costs the queue no clock.
      return task;
    }
    long charge = changeCost;
    balance -= charge * CHANGE_WEIGHT;
    return new Timed(task, false, charge);
  }

  @Override
  public Runnable poll() {
    lock.lock();
    try {
      return next();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public Runnable take() throws InterruptedException {
    lock.lockInterruptibly();
    try {
      Runnable task;
      while ((task = next()) == null) {
        notEmpty.await();
      }
      return task;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public Runnable poll(long timeout, TimeUnit unit) throws InterruptedException {
    long nanos = unit.toNanos(timeout);
    lock.lockInterruptibly();
    try {
      Runnable task;
      while ((task = next()) == null) {
        if (nanos <= 0) {
          return null;
        }
        nanos = notEmpty.awaitNanos(nanos);
      }
      return task;
    } finally {
      lock.unlock();
    }
  }

  /** The task {@link #poll} would run next (as queued, not timed), without charging for it. */
  @Override
  public Runnable peek() {
    lock.lock();
    try {
      return initialsTurn(settled(unsettled.get())) ? initial.peek() : change.peek();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public int size() {
    lock.lock();
    try {
      return change.size() + initial.size();
    } finally {
      lock.unlock();
    }
  }

  @Override
  public int remainingCapacity() {
    return Integer.MAX_VALUE;
  }

  @Override
  public boolean remove(Object task) {
    lock.lock();
    try {
      return change.remove(task) || initial.remove(task);
    } finally {
      lock.unlock();
    }
  }

  @Override
  public int drainTo(Collection<? super Runnable> into) {
    return drainTo(into, Integer.MAX_VALUE);
  }

  @Override
  public int drainTo(Collection<? super Runnable> into, int maxElements) {
    lock.lock();
    try {
      // What is drained does not run here (the pool's shutdownNow hands it back): as queued,
      // uncharged, change lane first.
      int drained = 0;
      for (Runnable task;
          drained < maxElements
              && (task = change.isEmpty() ? initial.poll() : change.poll()) != null;
          drained++) {
        into.add(task);
      }
      return drained;
    } finally {
      lock.unlock();
    }
  }

  /**
   * A copy of what waits, change lane first: the pool's {@code shutdownNow} and metrics read it.
   */
  @Override
  public Iterator<Runnable> iterator() {
    lock.lock();
    try {
      List<Runnable> all = new ArrayList<>(change);
      all.addAll(initial);
      return java.util.Collections.unmodifiableList(all).iterator();
    } finally {
      lock.unlock();
    }
  }
}
