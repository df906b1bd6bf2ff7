package io.xdsproxy.core;

import java.time.Duration;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.event.Level;

/**
 * One kind of log line that a storm could repeat thousands of times a second (streams opening after
 * a restart, a client NACKing in a loop, a control plane sending garbage): at most {@code limit}
 * lines per period go through; the rest are counted, and the next line that goes through says how
 * many were left out. Thread-safe.
 */
public final class LimitedLog {

  private final Logger log;
  private final Level level;
  private final int limit;
  private final long periodNanos;
  private final Ticker clock;
  private long periodStart;
  private int logged;
  private long suppressed;

  LimitedLog(Logger log, Level level, int limit, Duration period, Ticker clock) {
    this.log = log;
    this.level = level;
    this.limit = limit;
    this.periodNanos = period.toNanos();
    this.clock = clock;
    this.periodStart = clock.nanos();
  }

  /** {@code log}'s lines at {@code level}, at most {@code limit} per {@code period}. */
  public static LimitedLog of(Logger log, Level level, int limit, Duration period) {
    return new LimitedLog(log, level, limit, period, Ticker.SYSTEM);
  }

  /**
   * {@code log}'s lines at {@code level}, at most 100 per 10 seconds: what a person can still read,
   * and enough to see which nodes a storm is about.
   */
  public static LimitedLog of(Logger log, Level level) {
    return of(log, level, 100, Duration.ofSeconds(10));
  }

  /** Logs as SLF4J would, unless this period's lines are used up. */
  public void log(String format, Object... arguments) {
    log(LogFields.NONE, format, arguments);
  }

  /**
   * Logs as SLF4J would, with {@code fields} as the line's key-value pairs, unless this period's
   * lines are used up. The line that counts what was left out has no fields: the lines it stands
   * for were about other nodes and groups.
   */
  public void log(LogFields fields, String format, Object... arguments) {
    log(() -> fields, format, arguments);
  }

  /**
   * As {@link #log(LogFields, String, Object...)}, the fields made only for a line that goes
   * through: in a storm of thousands of streams opening, 100 lines are written, and making each
   * stream's fields (its peer's address as text, its node) cost more than the rest.
   */
  public void log(Supplier<LogFields> fields, String format, Object... arguments) {
    if (!log.isEnabledForLevel(level)) {
      return; // neither written nor worth counting as left out
    }
    long left = admit();
    if (left < 0) {
      return;
    }
    if (left > 0) {
      log.atLevel(level)
          .log(
              "({} similar lines left out in the last {} s)",
              left,
              Duration.ofNanos(periodNanos).toSeconds());
    }
    fields.get().addTo(log.atLevel(level)).log(format, arguments);
  }

  /**
   * Whether a line may go now: -1 if not (it is counted), else how many were left out before it, to
   * be reported with it.
   */
  synchronized long admit() {
    long now = clock.nanos();
    if (now - periodStart >= periodNanos) {
      periodStart = now;
      logged = 0;
    }
    if (logged >= limit) {
      suppressed++;
      return -1;
    }
    logged++;
    long left = suppressed;
    suppressed = 0;
    return left;
  }
}
