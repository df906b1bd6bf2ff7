package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.Ticker;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * How many bytes of newcomers' first states the proxy has handed to the transport and the transport
 * has not written yet, proxy-wide (issue 17: "first-state sends to newcomers are paced so that
 * updates to streams already served are not delayed behind them"). The worker pool's lanes ({@link
 * io.xdsproxy.core.WorkLanes}) order the work of building responses; this orders the writing: a
 * storm's first responses are large (a group's whole state) and Netty writes them on the same event
 * loops as the updates to the streams already served, which would otherwise queue behind them.
 *
 * <p>A stream's first response of a type takes credits ({@link Account#tryAcquire}) before it is
 * built, and is charged its encoded size once written; the credits come back when the stream's
 * transport has written it (gRPC's {@code isReady}: a stream with more than gRPC's threshold
 * buffered is not ready until Netty wrote it), when the stream ends, or after {@link
 * #HOLD_LIMIT_NANOS} (a client that stopped reading holds no credits for longer). The budget asks
 * the holders' transports itself ({@link #POLL_NANOS} apart while streams wait, and whenever a
 * stream asks with the budget spent) rather than wait for their {@code onReady} handlers: those run
 * in the newcomers' lane of the worker pool, behind every newcomer's queued work, which held
 * credits for seconds and slowed a storm's newcomers threefold. A response is admitted while fewer
 * than {@link #BYTES} are in flight, so one larger than the whole budget still goes when nothing
 * else is in flight; one not admitted stays owed (the stream's {@link PushScheduler} marks it
 * blocked, as for a transport that is not ready) and its stream is woken in arrival order when
 * credits come back. Updates to streams already served never take credits.
 *
 * <p>Thread-safe: every stream's executor calls in, under one lock held for a few field updates;
 * streams are woken outside it.
 */
public final class FirstStateBudget {

  /**
   * Whether the proxy paces first states at all: not yet. Measured (bench/RESULTS.md, "First states
   * paced by a budget of bytes in flight"), the budget brought the storm's update p99 to 1.33-1.83
   * times its value before the storm (main: 1.67-9.1), but the 5,000 newcomers took 25-34 s to hold
   * their state instead of 10-12 s, and 16 MiB was worse on both counts; until that is understood,
   * every stream's first state is written as soon as it is built, as before.
   */
  static final boolean PACED = false;

  /**
   * The bytes of first states in flight: 4 MiB is a dozen of the 315 KiB whole states a storm's
   * newcomers are sent (2,000 endpoints' assignments), enough to keep the event loops writing while
   * the workers build the next ones, and at a few GB/s on a local socket a few milliseconds of
   * writing, so an update to a served client is not queued behind seconds of first states.
   */
  static final long BYTES = 4L << 20;

  /**
   * How long one response holds its credits at most: a client that stops reading (its HTTP/2 window
   * full) leaves its response in the transport, but no longer on the event loops' hands.
   */
  static final long HOLD_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(1);

  /**
   * How often the holders' transports are asked whether they wrote their first states, while
   * streams wait: a millisecond is a few hundred KiB of writing, a fraction of the budget.
   */
  static final long POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  /** A budget that admits everything: for in-process benchmarks and tests without one. */
  static final FirstStateBudget UNLIMITED =
      new FirstStateBudget(Long.MAX_VALUE, HOLD_LIMIT_NANOS, () -> 0, null);

  /**
   * The proxy's budget: {@link #BYTES} in flight, time read from {@code ticker}, held credits swept
   * on {@code timer} (null: only when streams come and go).
   */
  static FirstStateBudget standard(Ticker ticker, ScheduledExecutorService timer) {
    return PACED ? new FirstStateBudget(BYTES, HOLD_LIMIT_NANOS, ticker, timer) : UNLIMITED;
  }

  private final long bytes;
  private final long holdLimitNanos;
  private final Ticker ticker;

  /** Sweeps held credits that reached the hold limit while streams wait; null for none. */
  private final ScheduledExecutorService timer;

  // Guarded by this.
  private long inFlight;

  /** Accounts holding credits, oldest first, and when they took them. */
  private final Map<Account, Long> held = new LinkedHashMap<>();

  private final ArrayDeque<Account> waiting = new ArrayDeque<>();
  private boolean sweepScheduled;

  /**
   * The one account of every stream when there is no limit: its methods return at once, so a stream
   * costs the budget nothing, not even an object of its own.
   */
  private final Account everyone;

  /**
   * The size of the largest first response written: what a woken stream is set aside. The largest,
   * not the last: a small one (a few routes) between whole states would wake hundreds of streams
   * for the room of one, each then writing a whole state.
   */
  private long estimate = 64 << 10;

  FirstStateBudget(long bytes, long holdLimitNanos, Ticker ticker, ScheduledExecutorService timer) {
    this.bytes = bytes;
    this.holdLimitNanos = holdLimitNanos;
    this.ticker = ticker;
    this.timer = timer;
    this.everyone = new Account(() -> true, () -> {});
  }

  /**
   * An account for one stream: {@code drained} tells whether its transport wrote what it was given
   * (thread-safe: gRPC's {@code isReady}), {@code wake} is called when credits came back while it
   * waited.
   */
  Account account(BooleanSupplier drained, Runnable wake) {
    return unlimited() ? everyone : new Account(drained, wake);
  }

  /** Bytes of first states written and not yet drained (or set aside for a woken stream). */
  synchronized long inFlight() {
    return inFlight;
  }

  /** How many streams wait for credits. */
  synchronized int waiting() {
    return waiting.size();
  }

  /** One stream's credits: used from its executor, like the stream. */
  final class Account {
    private final BooleanSupplier drained;
    private final Runnable wake;

    // Guarded by the budget.
    /** Bytes counted in flight for this stream: written, or set aside for it when woken. */
    private long charged;

    /** Of those, set aside when it was woken: it may write one first response without asking. */
    private long passBytes;

    private boolean pass;
    private boolean queued;

    private Account(BooleanSupplier drained, Runnable wake) {
      this.drained = drained;
      this.wake = wake;
    }

    /**
     * Whether a first response may be written now; if not, the stream is queued and woken when
     * credits come back. Every call that returns true is followed by {@link #written}.
     */
    boolean tryAcquire() {
      if (unlimited()) {
        return true;
      }
      List<Account> woken;
      boolean admitted;
      synchronized (FirstStateBudget.this) {
        woken = expire();
        if (pass) {
          pass = false;
          admitted = true;
        } else if (queued) {
          admitted = false;
        } else if (inFlight < bytes && waiting.isEmpty()) {
          admitted = true;
        } else {
          waiting.add(this);
          queued = true;
          scheduleSweep();
          admitted = false;
        }
      }
      wakeAll(woken);
      return admitted;
    }

    /** The first response admitted was written, {@code size} bytes of it (0: nothing was owed). */
    void written(long size) {
      if (unlimited()) {
        return;
      }
      List<Account> woken;
      synchronized (FirstStateBudget.this) {
        charged -= passBytes;
        inFlight -= passBytes;
        passBytes = 0;
        if (size > 0) {
          estimate = Math.max(estimate, size);
          if (charged == 0) {
            held.put(this, ticker.nanos());
          }
          charged += size;
          inFlight += size;
        } else if (charged == 0) {
          held.remove(this);
        }
        woken = admitted(); // what was set aside and not written admits others
      }
      wakeAll(woken);
    }

    /** The transport wrote what this stream was charged for: its credits come back. */
    void release() {
      if (unlimited()) {
        return;
      }
      List<Account> woken;
      synchronized (FirstStateBudget.this) {
        if (pass) {
          return; // woken and not yet written: what was set aside stays
        }
        giveBack(this);
        woken = admitted();
      }
      wakeAll(woken);
    }

    /** The stream ended: its credits come back and it waits no more. */
    void close() {
      if (unlimited()) {
        return;
      }
      List<Account> woken;
      synchronized (FirstStateBudget.this) {
        if (queued) {
          waiting.remove(this);
          queued = false;
        }
        pass = false;
        giveBack(this);
        woken = admitted();
      }
      wakeAll(woken);
    }
  }

  private boolean unlimited() {
    return bytes == Long.MAX_VALUE;
  }

  // Guarded by this.
  private void giveBack(Account account) {
    inFlight -= account.charged;
    account.charged = 0;
    account.passBytes = 0;
    held.remove(account);
  }

  /**
   * With the budget spent, credits whose transport wrote them, or held past the hold limit (a woken
   * stream's pass too), come back; returns the streams the credits now in hand admit.
   */
  private List<Account> expire() {
    if (inFlight < bytes) {
      return admitted();
    }
    long now = ticker.nanos();
    for (Iterator<Map.Entry<Account, Long>> oldest = held.entrySet().iterator();
        oldest.hasNext(); ) {
      Map.Entry<Account, Long> holding = oldest.next();
      Account account = holding.getKey();
      if (now - holding.getValue() < holdLimitNanos
          && (account.pass || !account.drained.getAsBoolean())) {
        continue;
      }
      inFlight -= account.charged;
      account.charged = 0;
      account.passBytes = 0;
      account.pass = false;
      oldest.remove();
    }
    return admitted();
  }

  /**
   * The waiting streams that the credits in hand admit, in arrival order: each is set aside as many
   * bytes as the largest first response written ({@link #estimate}; its real size replaces them
   * when it writes), so that a release wakes the few streams it makes room for, not every one
   * waiting.
   */
  private List<Account> admitted() {
    List<Account> woken = List.of();
    long now = ticker.nanos();
    while (!waiting.isEmpty() && inFlight < bytes) {
      Account account = waiting.poll();
      account.queued = false;
      account.pass = true;
      account.passBytes = estimate;
      if (account.charged == 0) {
        held.put(account, now);
      }
      account.charged += estimate;
      inFlight += estimate;
      if (woken.isEmpty()) {
        woken = new ArrayList<>();
      }
      woken.add(account);
    }
    return woken;
  }

  private void scheduleSweep() {
    if (timer == null || sweepScheduled || held.isEmpty()) {
      return;
    }
    long due = held.values().iterator().next() + holdLimitNanos - ticker.nanos();
    sweepScheduled = true;
    timer.schedule(this::sweep, Math.max(Math.min(due, POLL_NANOS), 0), TimeUnit.NANOSECONDS);
  }

  /**
   * Credits whose transport wrote them, or held past the hold limit, come back: on the timer, or a
   * test's call.
   */
  void sweep() {
    List<Account> woken;
    synchronized (this) {
      sweepScheduled = false;
      woken = expire();
      if (!waiting.isEmpty()) {
        scheduleSweep();
      }
    }
    wakeAll(woken);
  }

  private static void wakeAll(List<Account> woken) {
    woken.forEach(account -> account.wake.run());
  }
}
