package io.xdsproxy.downstream.xds;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.xdsproxy.core.TypeUrl;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The downstream side's meters, named by Prometheus conventions once exported ({@code xds_} prefix,
 * {@code _total} for counters): open streams by protocol variant and service; by type the requests,
 * ACKs, NACKs, responses and bytes sent; and the fan-out latency, from an upstream update reaching
 * the proxy to a response carrying it written to a client, one observation per response so written
 * (the histogram's top is the last client reached).
 */
public final class StreamMetrics {

  private final MeterRegistry meters;
  private final Map<String, AtomicInteger> open = new ConcurrentHashMap<>();
  private final Map<TypeUrl, TypeMeters> byType = new ConcurrentHashMap<>();

  public StreamMetrics(MeterRegistry meters) {
    this.meters = meters;
  }

  /** A stream of {@code protocol} ("sotw", "delta") on {@code service} ("ads" or a type) was identified. */
  void opened(String protocol, String service) {
    streams(protocol, service).incrementAndGet();
  }

  void closed(String protocol, String service) {
    streams(protocol, service).decrementAndGet();
  }

  private AtomicInteger streams(String protocol, String service) {
    return open.computeIfAbsent(protocol + "/" + service, key -> {
      AtomicInteger count = new AtomicInteger();
      Gauge.builder("xds.downstream.streams", count, AtomicInteger::get)
          .description("Open downstream xDS streams")
          .tag("protocol", protocol)
          .tag("service", service)
          .register(meters);
      return count;
    });
  }

  void request(TypeUrl type) {
    of(type).requests().increment();
  }

  void nack(TypeUrl type) {
    of(type).nacks().increment();
  }

  void ack(TypeUrl type) {
    of(type).acks().increment();
  }

  /**
   * A stream was ended, or paced, for going past the limit {@code limit} ("names_per_request",
   * "name_length", "streams_per_group", "streams_per_node", "request_rate").
   */
  void limited(String limit) {
    Counter.builder("xds.downstream.limited")
        .description("Downstream streams ended, or paced, for going past a limit")
        .tag("limit", limit)
        .register(meters)
        .increment();
  }

  /** A response of {@code bytes} encoded bytes was written. */
  void response(TypeUrl type, int bytes) {
    TypeMeters meters = of(type);
    meters.responses().increment();
    meters.bytes().increment(bytes);
  }

  /** A response carrying an update that reached the proxy {@code nanos} ago was written. */
  void fannedOut(TypeUrl type, long nanos) {
    of(type).fanOut().record(nanos, TimeUnit.NANOSECONDS);
  }

  /** One type's meters, registered once: every response of every stream counts here, so no lookup per count. */
  private record TypeMeters(Counter requests, Counter acks, Counter nacks, Counter responses, Counter bytes, Timer fanOut) {}

  private TypeMeters of(TypeUrl type) {
    return byType.computeIfAbsent(type, t -> new TypeMeters(
        counter("xds.downstream.requests", "Requests received from downstream clients", t),
        counter("xds.downstream.acks", "Responses downstream clients accepted", t),
        counter("xds.downstream.nacks", "Responses downstream clients rejected", t),
        counter("xds.downstream.responses", "Responses sent to downstream clients", t),
        counter("xds.downstream.sent.bytes", "Encoded bytes of the responses sent to downstream clients", t),
        Timer.builder("xds.fanout.latency")
            .description("From an upstream update reaching the proxy to a response carrying it written to a client")
            .tag("type", t.shortName())
            .publishPercentileHistogram()
            .minimumExpectedValue(Duration.ofMillis(1))
            .maximumExpectedValue(Duration.ofSeconds(30))
            .register(meters)));
  }

  private Counter counter(String name, String description, TypeUrl type) {
    return Counter.builder(name).description(description).tag("type", type.shortName()).register(meters);
  }
}
