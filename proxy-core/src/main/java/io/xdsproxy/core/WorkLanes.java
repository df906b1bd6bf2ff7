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
 * <p>The workers' time is not all an initial task costs: what it writes, a newcomer's whole state,
 * is framed and copied to its socket by a Netty event loop, which the lanes do not order, and whose
 * loops also write every update. So the initial lane also waits on a {@link Gate}, which the proxy
 * shuts while its xDS event loops lag (bench/RESULTS.md, "The event loops' lag"): while it is shut,
 * only change work is handed out, and the initial lane waits, rechecking every {@link #RECHECK} ns,
 * though never longer than {@link #MOST_HELD} ns without a task of its own, so newcomers still
 * progress on a proxy whose loops lag for other reasons.
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

  /** How often a worker with only gated initial work looks at the gate again, in nanoseconds. */
  static final long RECHECK = TimeUnit.MILLISECONDS.toNanos(1);

  /** The longest the gate holds the initial lane without one task of it handed out, in ns. */
  static final long MOST_HELD = TimeUnit.MILLISECONDS.toNanos(100);

  /** Whether initial work may be handed out now, asked only while some waits. */
  @FunctionalInterface
  public interface Gate {
    /** Always open: the lanes' shares alone. */
    Gate OPEN = () -> true;

    boolean open();
  }

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
  private final Gate gate;
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

  /**
   * When an initial task was last handed out, or the initial lane last had work queued in it while
   * empty, whichever is later; on the ticker. Guarded by the lock.
   */
  private long initialServedAt;

  /** Initial tasks the gate held, for metrics. */
  private final AtomicLong held = new AtomicLong();

  /** A queue whose tasks are timed on {@code ticker}: {@link Ticker#SYSTEM} in production. */
  public WorkLanes(Ticker ticker) {
    this(ticker, Gate.OPEN);
  }

  /** A queue whose initial lane also waits on {@code gate}. */
  public WorkLanes(Ticker ticker, Gate gate) {
    this.ticker = ticker;
    this.gate = gate;
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

  /** How many times a worker found initial work to do and the gate shut. */
  public long heldByGate() {
    return held.get();
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
      if (task instanceof Initial) {
        if (initial.isEmpty()) {
          initialServedAt = ticker.nanos();
        }
        initial.add(task);
      } else {
        change.add(task);
      }
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

  /**
   * Whether the gate lets an initial task out now: open, or shut for too long; the caller holds the
   * lock and has initial work.
   */
  private boolean gateLets() {
    if (gateOpen()) {
      return true;
    }
    held.incrementAndGet();
    return false;
  }

  private boolean gateOpen() {
    return gate.open() || ticker.nanos() - initialServedAt >= MOST_HELD;
  }

  /** The next task by the lanes' rule, timed and charged; the caller holds the lock. */
  private Runnable next() {
    balance = settled(unsettled.getAndSet(0));
    if (initialsTurn(balance) && gateLets()) {
      initialServedAt = ticker.nanos();
      long charge = initialCost;
      balance += charge * INITIAL_WEIGHT;
      return new Timed(((Initial) initial.poll()).task(), true, charge);
    }
    Runnable task = change.poll();
    if (task == null || initial.isEmpty()) {
      // Nothing to share the workers with: the task runs as it is, untimed, and an idle initial
      // lane banks nothing of it. The steady state, updates only, costs the queue no clock. (No
      // task, with initial work waiting: the gate holds it, and the caller looks again soon.)
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
        if (initial.isEmpty()) {
          notEmpty.await();
        } else {
          notEmpty.awaitNanos(RECHECK); // held by the gate: to look again
        }
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
        if (initial.isEmpty()) {
          nanos = notEmpty.awaitNanos(nanos);
        } else {
          // Held by the gate: to look again in a recheck's time.
          long waited = Math.min(nanos, RECHECK);
          nanos -= waited - notEmpty.awaitNanos(waited);
        }
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
      return initialsTurn(settled(unsettled.get())) && gateOpen() ? initial.peek() : change.peek();
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
