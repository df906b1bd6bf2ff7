package io.xdsproxy.downstream.xds;

import java.time.Clock;

/**
 * The request rate of one stream ({@code --max-requests-per-second}): a token bucket of twice the
 * rate, so a client may send a burst at startup, but one that floods the proxy is read at the rate,
 * whatever it sends. Confined to the stream's executor; time comes from {@code clock} and waits go
 * to {@code timer}, so a test drives both.
 */
final class RequestPacer {

  /** Runs a task after a delay: the stream's timer, or a test's. */
  @FunctionalInterface
  interface Timer {
    void schedule(Runnable task, long delayMillis);
  }

  /** Told once, the first time the stream is paced: for the log and the metric. */
  @FunctionalInterface
  interface OnPaced {
    void paced(int rate);
  }

  private final int rate;
  private final Clock clock;
  private final Timer timer;
  private final OnPaced onPaced;

  /** Requests the stream may still read at once, and when that was last worked out. */
  private double tokens;

  private long tokensAt;
  private boolean paced;

  /**
   * @param rate requests a second, on average; 0 for no limit
   */
  RequestPacer(int rate, Clock clock, Timer timer, OnPaced onPaced) {
    this.rate = rate;
    this.clock = clock;
    this.timer = timer;
    this.onPaced = onPaced;
    this.tokens = 2.0 * rate;
    this.tokensAt = clock.millis();
  }

  /**
   * Reads the next request with {@code read}: now, or, past the rate, from the timer when a token
   * is due.
   */
  void next(Runnable read) {
    if (rate == 0) {
      read.run();
      return;
    }
    long now = clock.millis();
    tokens = Math.min(2.0 * rate, tokens + (now - tokensAt) * rate / 1000.0);
    tokensAt = now;
    tokens -= 1;
    if (tokens >= 0) {
      read.run();
      return;
    }
    long wait = (long) Math.ceil(-tokens * 1000.0 / rate);
    if (!paced) {
      paced = true;
      onPaced.paced(rate);
    }
    timer.schedule(read, wait);
  }
}
