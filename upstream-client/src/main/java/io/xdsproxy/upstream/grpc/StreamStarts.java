package io.xdsproxy.upstream.grpc;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.xdsproxy.core.SerialExecutor;
import io.xdsproxy.core.Ticker;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The rate at which the sessions of one upstream start streams to the control plane ({@code
 * --upstream-max-new-sessions-per-second}): a token bucket holding one second's worth, so a replica
 * with a handful of node groups starts them all at once, but a fleet of group sessions starting or
 * reconnecting together (the proxy restarted, the control plane restarted, a zone failed over)
 * reaches the control plane at the rate. A control plane protects itself from such storms by
 * refusing what comes too fast (istiod admits {@code PILOT_MAX_REQUESTS_PER_SECOND} new streams a
 * second, 25 before 1.21 and on a 2-core istiod since, and ends with RESOURCE_EXHAUSTED a stream it
 * cannot admit within a second): a refused stream is a failed attempt, backed off and tried again,
 * where one that waits here starts at its turn.
 *
 * <p>Every stream start takes a token, a session's first and every reconnect: to the control plane
 * they are the same, a new stream, and a reconnect storm after a control-plane restart is exactly
 * the storm it rate-limits. Meanwhile the group's clients are served from the store.
 *
 * <p>The turns are shared fairly between tenants (DESIGN invariant 12): each start waits in the
 * queue of the tenant that opened its group ({@link io.xdsproxy.core.VerifiedIdentity#tenant}), and
 * tokens go round the tenants that have starts waiting, one each in turn, first asked first started
 * within a tenant. So one client's flood of new groups delays another tenant's first start by at
 * most one turn per tenant waiting, not by the flood's length; and after a control-plane restart
 * every tenant's groups reconnect at the same pace whoever has the most.
 *
 * <p>Shared by the sessions of one upstream: the queue and the bucket are confined to an executor
 * of their own on the pool; a session only enqueues, and hears back on its own executor. Time comes
 * from {@code ticker} and waits go to {@code timer}, so a test drives both.
 */
final class StreamStarts {

  /** A start waiting for its turn: {@link #withdraw}n, it never runs and takes no token. */
  static final class Waiting {
    private static final int WAITING = 0;
    private static final int STARTED = 1;
    private static final int WITHDRAWN = 2;

    private final String tenant;
    private final Runnable start;
    private final long since;
    private final AtomicInteger state = new AtomicInteger(WAITING);
    private final StreamStarts owner;

    private Waiting(String tenant, Runnable start, long since, StreamStarts owner) {
      this.tenant = tenant;
      this.start = start;
      this.since = since;
      this.owner = owner;
    }

    /** The session closed before its turn: it leaves the queue without taking a token. */
    void withdraw() {
      if (state.compareAndSet(WAITING, WITHDRAWN)) {
        owner.waiting.decrementAndGet();
      }
    }

    private boolean begin() {
      if (state.compareAndSet(WAITING, STARTED)) {
        owner.waiting.decrementAndGet();
        return true;
      }
      return false;
    }
  }

  private final int rate;
  private final Ticker ticker;
  private final ScheduledExecutorService timer;
  private final SerialExecutor executor;

  /** Starts asked for and neither started nor withdrawn: read by the gauge. */
  private final AtomicInteger waiting = new AtomicInteger();

  private final Timer waited;

  // Confined to the executor.
  /** The starts waiting, per tenant, in the order asked; a tenant with none is not kept. */
  private final Map<String, Queue<Waiting>> queues = new HashMap<>();

  /** The tenants with starts waiting, whose turn is next first. */
  private final Queue<String> turns = new ArrayDeque<>();

  private double tokens;
  private long tokensAt;
  private boolean wakeScheduled;

  /**
   * @param rate stream starts a second, at most, on average; 0 for no limit
   */
  StreamStarts(
      int rate,
      Ticker ticker,
      Executor pool,
      ScheduledExecutorService timer,
      MeterRegistry meters) {
    if (rate < 0) {
      throw new IllegalArgumentException("a rate of stream starts cannot be negative: " + rate);
    }
    this.rate = rate;
    this.ticker = ticker;
    this.timer = timer;
    this.executor = new SerialExecutor(pool, "upstream stream starts");
    this.tokens = rate;
    this.tokensAt = ticker.nanos();
    Gauge.builder("xds.upstream.sessions.waiting", waiting, AtomicInteger::get)
        .description(
            "Upstream streams (new sessions and reconnects) waiting for their turn to start"
                + " (--upstream-max-new-sessions-per-second)")
        .register(meters);
    this.waited =
        Timer.builder("xds.upstream.session.start.wait")
            .description(
                "How long upstream streams waited for their turn to start, after any backoff"
                    + " (--upstream-max-new-sessions-per-second)")
            .register(meters);
  }

  /**
   * Runs {@code start} when a token is there and it is {@code tenant}'s turn: now if both are, else
   * from the timer, after every start {@code tenant} asked for before it, and in turn with the
   * other tenants' starts. {@code start} should only hand the work to its session's executor.
   *
   * @param tenant who opened the group whose stream starts ({@link
   *     io.xdsproxy.core.VerifiedIdentity#tenant})
   */
  Waiting start(String tenant, Runnable start) {
    Waiting ticket = new Waiting(tenant, start, ticker.nanos(), this);
    waiting.incrementAndGet();
    if (rate == 0) {
      begin(ticket);
      return ticket;
    }
    executor.execute(
        () -> {
          queues
              .computeIfAbsent(
                  ticket.tenant,
                  t -> {
                    turns.add(t);
                    return new ArrayDeque<>();
                  })
              .add(ticket);
          drain();
        });
    return ticket;
  }

  /**
   * Starts what the tokens allow, a tenant's next each in turn: the tenant whose turn it is goes to
   * the back of the turns once it started one, and leaves them once it has none waiting.
   */
  private void drain() {
    executor.assertCurrent();
    long now = ticker.nanos();
    tokens = Math.min(rate, tokens + (now - tokensAt) * rate / 1e9);
    tokensAt = now;
    for (String tenant = turns.peek(); tenant != null; tenant = turns.peek()) {
      Queue<Waiting> queue = queues.get(tenant);
      Waiting next = queue.peek();
      if (next == null) {
        turns.poll();
        queues.remove(tenant);
        continue;
      }
      if (next.state.get() == Waiting.WITHDRAWN) {
        queue.poll();
        continue;
      }
      if (tokens < 1) {
        wakeWhenATokenIsDue();
        return;
      }
      queue.poll();
      if (begin(next)) {
        tokens -= 1;
        turns.add(turns.poll());
      }
    }
  }

  /** Runs {@code ticket}'s start unless it was withdrawn; whether it ran. */
  private boolean begin(Waiting ticket) {
    if (!ticket.begin()) {
      return false;
    }
    waited.record(ticker.nanos() - ticket.since, TimeUnit.NANOSECONDS);
    ticket.start.run();
    return true;
  }

  private void wakeWhenATokenIsDue() {
    if (wakeScheduled) {
      return;
    }
    wakeScheduled = true;
    long wait = (long) Math.ceil((1 - tokens) * 1e9 / rate);
    try {
      timer.schedule(
          () ->
              executor.execute(
                  () -> {
                    wakeScheduled = false;
                    drain();
                  }),
          wait,
          TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException shuttingDown) {
      // The proxy is stopping: what waits dies with it.
    }
  }
}
