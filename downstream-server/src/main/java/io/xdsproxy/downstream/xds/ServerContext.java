package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.NodeGroups;
import java.time.Clock;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

/**
 * What every downstream stream is served from: the node groups, the threads its executor runs on,
 * the metrics the services register, the registry of open streams, the clock its client status is
 * stamped with and its request rate is measured by, the timer that reads a paced stream's next
 * request, the limits on what a client may ask, who may be served what, and where its metrics and
 * log lines go.
 *
 * @param events where the streams' events go; null for the usual place: counted in {@code metrics}
 *     and logged ({@link MeteredStreamEvents})
 */
public record ServerContext(
    NodeGroups groups,
    Executor pool,
    StreamMetrics metrics,
    Clients clients,
    Clock clock,
    ScheduledExecutorService timer,
    Limits limits,
    Access access,
    StreamEvents events) {

  public ServerContext {
    if (limits.requestsPerSecond() > 0 && timer == null) {
      throw new IllegalArgumentException("a request rate needs a timer to read paced requests by");
    }
    if (events == null) {
      events = new MeteredStreamEvents(metrics, groups.ticker());
    }
  }

  /** A context without limits and without a timer: for in-process benchmarks. */
  public ServerContext(
      NodeGroups groups, Executor pool, StreamMetrics metrics, Clients clients, Clock clock) {
    this(groups, pool, metrics, clients, clock, null, Limits.NONE, Access.OPEN, null);
  }
}
