package io.xdsproxy.core;

import java.util.AbstractQueue;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The worker pool's queue, in two lanes, so that a reconnect storm does not delay updates to the
 * clients already served: "change" work (an update's fan-out to streams that hold their state, the
 * groups' and upstream sessions' work, gRPC's callbacks for those streams) is taken ahead of
 * "initial" work (a new stream's first requests, read and parsed, and the first responses it is
 * owed), queued with {@link #initial}. While both lanes have work, every {@value
 * #CHANGE_PER_INITIAL} change tasks are followed by one initial task, so newcomers always get a
 * share of the workers and are never starved; while the change lane is empty they get all of them.
 * Within a lane, first in first out.
 *
 * <p>A task's cost is what its owner runs in one go ({@link SerialExecutor} runs up to 64 of its
 * tasks per turn), so the lanes share turns, not time: a turn of initial work (a first state
 * written) costs more than one of change work, which is why change work gets more turns.
 *
 * <p>Given to a {@link java.util.concurrent.ThreadPoolExecutor} as its work queue: thread-safe, one
 * lock, as {@link java.util.concurrent.ArrayBlockingQueue}; unbounded, as the pool's queue was.
 */
public final class WorkLanes extends AbstractQueue<Runnable> implements BlockingQueue<Runnable> {

  /** Change tasks taken for each initial one while both lanes have work. */
  public static final int CHANGE_PER_INITIAL = 4;

  /** A task of the initial lane: how the queue tells the lanes apart. */
  private record Initial(Runnable task) implements Runnable {
    @Override
    public void run() {
      task.run();
    }
  }

  private final ReentrantLock lock = new ReentrantLock();
  private final Condition notEmpty = lock.newCondition();
  private final ArrayDeque<Runnable> change = new ArrayDeque<>();
  private final ArrayDeque<Runnable> initial = new ArrayDeque<>();

  /** Change tasks taken since the last initial one. */
  private int changeTaken;

  /**
   * {@code task}, to be queued in the initial lane of a pool whose queue this is; run as it is by
   * any other executor (a test's direct one, a benchmark's).
   */
  public static Runnable initial(Runnable task) {
    return new Initial(task);
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

  /** Whether the next task is the initial lane's; the caller holds the lock. */
  private boolean initialsTurn() {
    return !initial.isEmpty() && (change.isEmpty() || changeTaken >= CHANGE_PER_INITIAL);
  }

  /** The next task by the lanes' rule; the caller holds the lock. */
  private Runnable next() {
    if (initialsTurn()) {
      changeTaken = 0;
      return initial.poll();
    }
    Runnable task = change.poll();
    if (task != null) {
      changeTaken++;
    }
    return task;
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

  /** The task {@link #poll} would return, without its turn being counted. */
  @Override
  public Runnable peek() {
    lock.lock();
    try {
      return initialsTurn() ? initial.peek() : change.peek();
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
      int drained = 0;
      for (Runnable task; drained < maxElements && (task = next()) != null; drained++) {
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
