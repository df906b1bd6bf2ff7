package io.xdsproxy.app;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.xdsproxy.core.LimitedLog;
import io.xdsproxy.core.LogFields;
import java.net.InetAddress;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * The xDS port's open connections, in all and per peer address, held to {@link TransportLimits}'
 * {@code --max-connections} and {@code --max-connections-per-address} (DESIGN invariant 12): a
 * connection past either is refused as it is accepted ({@link LimitedServerChannel}), counted in
 * {@code xds_connections_refused_total} and logged, a few lines a second at most.
 *
 * <p>Connections are admitted on the port's one accepting thread and released on their own event
 * loops when they close: the counts are atomic, not confined.
 */
final class ConnectionCounts {

  private static final Logger log = LoggerFactory.getLogger(ConnectionCounts.class);

  /** A flood of connections is refused thousands of times a second: a few lines say so. */
  private static final LimitedLog refusals =
      LimitedLog.of(log, Level.WARN, 3, Duration.ofSeconds(1));

  /** A limit a connection can be refused for: its metric label and its flag. */
  enum Limit {
    TOTAL("total", "--max-connections"),
    PER_ADDRESS("per_address", "--max-connections-per-address");

    final String label;
    final String flag;

    Limit(String label, String flag) {
      this.label = label;
      this.flag = flag;
    }
  }

  private final int maxTotal;
  private final int maxPerAddress;
  private final AtomicInteger total = new AtomicInteger();

  /** Open connections by peer address; kept only while there is a per-address limit. */
  private final Map<InetAddress, Integer> perAddress = new ConcurrentHashMap<>();

  private final Map<Limit, Counter> refused = new EnumMap<>(Limit.class);

  ConnectionCounts(TransportLimits limits, MeterRegistry meters) {
    maxTotal = limits.maxConnections() == 0 ? Integer.MAX_VALUE : limits.maxConnections();
    maxPerAddress =
        limits.maxConnectionsPerAddress() == 0
            ? Integer.MAX_VALUE
            : limits.maxConnectionsPerAddress();
    for (Limit limit : Limit.values()) {
      refused.put(
          limit,
          Counter.builder("xds.connections.refused")
              .description(
                  "Connections to the xDS port closed as they were accepted, for going past a"
                      + " limit: in all (--max-connections) or from one address"
                      + " (--max-connections-per-address)")
              .tag("limit", limit.label)
              .register(meters));
    }
    Gauge.builder("xds.connections", total, AtomicInteger::get)
        .description("Open connections to the xDS port, as --max-connections counts them")
        .register(meters);
  }

  /**
   * Takes a connection from {@code peer} if the limits allow it; else counts and logs the refusal
   * and says which limit refused it. A connection taken is {@linkplain #release released} when it
   * closes.
   */
  Optional<Limit> admit(InetAddress peer) {
    if (total.incrementAndGet() > maxTotal) {
      total.decrementAndGet();
      return refuse(peer, Limit.TOTAL, maxTotal);
    }
    if (maxPerAddress != Integer.MAX_VALUE) {
      boolean[] full = new boolean[1];
      perAddress.compute(
          peer,
          (address, open) -> {
            int now = open == null ? 0 : open;
            full[0] = now >= maxPerAddress;
            return full[0] ? open : now + 1;
          });
      if (full[0]) {
        total.decrementAndGet();
        return refuse(peer, Limit.PER_ADDRESS, maxPerAddress);
      }
    }
    return Optional.empty();
  }

  /** A connection {@link #admit} took from {@code peer} has closed. */
  void release(InetAddress peer) {
    total.decrementAndGet();
    if (maxPerAddress != Integer.MAX_VALUE) {
      perAddress.computeIfPresent(peer, (address, open) -> open > 1 ? open - 1 : null);
    }
  }

  /** The connections open now. */
  int open() {
    return total.get();
  }

  private Optional<Limit> refuse(InetAddress peer, Limit limit, int most) {
    refused.get(limit).increment();
    refusals.log(
        LogFields.NONE.peer(peer.getHostAddress()),
        "refused a connection to the xDS port from {}: {} connections{} are open, the most {}"
            + " allows; the clients already connected are served as before",
        peer.getHostAddress(),
        most,
        limit == Limit.TOTAL ? "" : " from that address",
        limit.flag);
    return Optional.of(limit);
  }
}
