package io.xdsproxy.app;

import io.grpc.netty.NettyServerBuilder;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.ChannelFactory;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.SingleThreadEventExecutor;
import io.xdsproxy.core.Ticker;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The xDS port's Netty event loops, the proxy's own rather than gRPC's shared defaults (as many,
 * two per processor), so that it knows how far behind they are: their <em>lag</em>, how long a task
 * handed to a loop now waits before it runs. Every connection's reads and writes run on one of
 * them; a loop that lags holds up the responses of every stream on it, an update's among them.
 *
 * <p>Measured by probes: while someone {@linkplain #lagNanos asks} (the worker pool's lanes, while
 * newcomers' work waits) a probe goes to each loop every {@link #FAST_PROBE} whose last one has
 * run, otherwise every {@link #SLOW_PROBE}, so that an idle proxy's loops are not woken a thousand
 * times a second. A loop's lag is the wait of its last probe, or, while one waits still, the longer
 * time that one has waited; the loops' lag is the longest of theirs.
 */
final class ServerEventLoops implements AutoCloseable {

  /** Between probes while the lag is being asked for. */
  static final long FAST_PROBE = TimeUnit.MILLISECONDS.toNanos(1);

  /** Between probes otherwise: the metric's resolution. */
  static final long SLOW_PROBE = TimeUnit.MILLISECONDS.toNanos(100);

  /** How long after the last question the probes stay fast. */
  private static final long ASKED_LATELY = TimeUnit.MILLISECONDS.toNanos(50);

  private final EventLoopGroup boss;
  private final EventLoopGroup workers;
  private final List<Probe> probes = new ArrayList<>();
  private final ScheduledExecutorService timer;
  private final Ticker ticker;
  private volatile long askedAt;
  private volatile boolean closed;

  /** One probe per loop: posted, then run by the loop, which tells how long it waited. */
  private final class Probe implements Runnable {
    private final EventLoop loop;

    /** When the probe waiting on the loop was posted; 0 while none waits. */
    private volatile long postedAt;

    private volatile long lastWait;

    Probe(EventLoop loop) {
      this.loop = loop;
    }

    void post(long now) {
      if (postedAt == 0) {
        postedAt = now == 0 ? 1 : now;
        loop.execute(this);
      }
    }

    @Override
    public void run() {
      lastWait = Math.max(0, ticker.nanos() - postedAt);
      postedAt = 0;
    }

    long lag(long now) {
      long posted = postedAt;
      return posted == 0 ? lastWait : Math.max(lastWait, now - posted);
    }
  }

  /**
   * {@code threads} event loops (0: Netty's default, two per processor) for the xDS port, probed on
   * {@code timer}; their lag in {@code meters}.
   */
  ServerEventLoops(
      int threads, ScheduledExecutorService timer, Ticker ticker, MeterRegistry meters) {
    this.timer = timer;
    this.ticker = ticker;
    boss =
        new MultiThreadIoEventLoopGroup(
            1, new DefaultThreadFactory("xds-server-boss", true), NioIoHandler.newFactory());
    workers =
        new MultiThreadIoEventLoopGroup(
            threads, new DefaultThreadFactory("xds-server-io", true), NioIoHandler.newFactory());
    for (EventExecutor loop : workers) {
      probes.add(new Probe((EventLoop) loop));
    }
    Gauge.builder("xds.server.event.loop.lag", this, loops -> loops.lagNanos(false) / 1e9)
        .description(
            "How long a task handed to the xDS port's busiest event loop waits before it runs,"
                + " lately: every connection's reads and writes run on one of these loops")
        .baseUnit("seconds")
        .register(meters);
    timer.execute(this::probe);
  }

  /**
   * {@code builder} on these loops, listening with {@code channels}' server channels: NIO ones, as
   * the loops are.
   */
  NettyServerBuilder serve(
      NettyServerBuilder builder, ChannelFactory<? extends NioServerSocketChannel> channels) {
    return builder.bossEventLoopGroup(boss).workerEventLoopGroup(workers).channelFactory(channels);
  }

  /** The loops that connections run on: for tests that hold one. */
  EventLoopGroup group() {
    return workers;
  }

  /**
   * Tasks waiting on the loops now, all of them together: what they are behind on. A loop slow to
   * be scheduled (a throttled or crowded CPU) lags with nothing waiting; one behind on writes has a
   * queue.
   */
  int backlog() {
    int tasks = 0;
    for (Probe probe : probes) {
      if (probe.loop instanceof SingleThreadEventExecutor executor) {
        tasks += executor.pendingTasks();
      }
    }
    return tasks;
  }

  /** The loops' lag now, in nanoseconds; asking keeps the probes fast for a while. */
  long lagNanos() {
    return lagNanos(true);
  }

  private long lagNanos(boolean asking) {
    long now = ticker.nanos();
    if (asking) {
      askedAt = now;
    }
    long lag = 0;
    for (Probe probe : probes) {
      lag = Math.max(lag, probe.lag(now));
    }
    return lag;
  }

  private void probe() {
    if (closed) {
      return;
    }
    long now = ticker.nanos();
    try {
      for (Probe probe : probes) {
        probe.post(now);
      }
    } catch (RejectedExecutionException e) {
      return; // the loops are shutting down
    }
    long next = now - askedAt < ASKED_LATELY ? FAST_PROBE : SLOW_PROBE;
    try {
      timer.schedule(this::probe, next, TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      // the timer is shutting down
    }
  }

  /** Stops the probes and the loops; the server using them has stopped. */
  @Override
  public void close() {
    closed = true;
    Future<?> bossDone = boss.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    Future<?> workersDone = workers.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    bossDone.awaitUninterruptibly(2, TimeUnit.SECONDS);
    workersDone.awaitUninterruptibly(2, TimeUnit.SECONDS);
  }
}
