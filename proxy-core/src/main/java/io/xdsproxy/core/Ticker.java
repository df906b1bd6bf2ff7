package io.xdsproxy.core;

/**
 * Where the node groups read the time an update reached the proxy: {@link System#nanoTime} in
 * production, a fake in tests. Only differences between two readings mean anything, as with {@link
 * System#nanoTime}; the fan-out latency is one (a stream's send time less a snapshot's {@link
 * TypeSnapshot#changedAt}).
 */
@FunctionalInterface
public interface Ticker {

  /** The system's monotonic clock. */
  Ticker SYSTEM = System::nanoTime;

  long nanos();
}
