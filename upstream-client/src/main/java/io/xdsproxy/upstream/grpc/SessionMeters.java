package io.xdsproxy.upstream.grpc;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.xdsproxy.core.NodeGroupKey;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What one node group's upstream session counts, labelled with the group: NACKs sent, streams
 * reopened and abandoned, and whether its stream is up. Removed from the registry with the session.
 */
final class SessionMeters {

  private final MeterRegistry registry;

  /** NACKs sent upstream: each a response the control plane should not have sent. */
  private final Counter nacks;

  /** Streams that ended and were reopened. */
  private final Counter reconnects;

  /** Streams the proxy abandoned for a new one, to ask for what no request on the stream could. */
  private final Counter abandoned;

  /**
   * 1 while the current stream has answered, 0 while connecting or backing off; read by the gauge.
   */
  private final AtomicInteger connected = new AtomicInteger();

  private final Gauge connectedGauge;

  SessionMeters(NodeGroupKey group, MeterRegistry registry) {
    this.registry = registry;
    this.nacks =
        Counter.builder("xds.upstream.nacks")
            .description(
                "Responses from the control plane NACKed by the proxy (malformed or invalid)")
            .tag("group", group.label())
            .register(registry);
    this.reconnects =
        Counter.builder("xds.upstream.reconnects")
            .description("Upstream streams that ended and were reopened")
            .tag("group", group.label())
            .register(registry);
    this.abandoned =
        Counter.builder("xds.upstream.streams.abandoned")
            .description(
                "Upstream streams the proxy replaced by a new one because no request on the stream could ask for"
                    + " what the group needed (a wildcard after names; a do_not_cache copy the upstream did not resend)")
            .tag("group", group.label())
            .register(registry);
    this.connectedGauge =
        Gauge.builder("xds.upstream.connected", connected, AtomicInteger::get)
            .description(
                "1 while the group's upstream stream is open and has answered, 0 while connecting or backing off")
            .tag("group", group.label())
            .register(registry);
  }

  void nacked() {
    nacks.increment();
  }

  /** The stream ended and is reopened after a backoff: it is down meanwhile. */
  void reconnected() {
    reconnects.increment();
    connected.set(0);
  }

  /** The stream was abandoned for a new one: down until the new one answers. */
  void abandoned() {
    abandoned.increment();
    connected.set(0);
  }

  void connected(boolean up) {
    connected.set(up ? 1 : 0);
  }

  /** The session closed: its meters leave the registry. */
  void remove() {
    registry.remove(nacks);
    registry.remove(reconnects);
    registry.remove(abandoned);
    registry.remove(connectedGauge);
  }
}
