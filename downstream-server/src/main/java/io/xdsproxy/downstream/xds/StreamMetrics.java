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
    counter("xds.downstream.requests", "Requests received from downstream clients", type).increment();
  }

  void nack(TypeUrl type) {
    counter("xds.downstream.nacks", "Responses downstream clients rejected", type).increment();
  }

  void ack(TypeUrl type) {
    counter("xds.downstream.acks", "Responses downstream clients accepted", type).increment();
  }

  /** A response of {@code bytes} encoded bytes was written. */
  void response(TypeUrl type, int bytes) {
    counter("xds.downstream.responses", "Responses sent to downstream clients", type).increment();
    counter("xds.downstream.sent.bytes", "Encoded bytes of the responses sent to downstream clients", type)
        .increment(bytes);
  }

  /** A response carrying an update that reached the proxy {@code nanos} ago was written. */
  void fannedOut(TypeUrl type, long nanos) {
    Timer.builder("xds.fanout.latency")
        .description("From an upstream update reaching the proxy to a response carrying it written to a client")
        .tag("type", type.shortName())
        .publishPercentileHistogram()
        .minimumExpectedValue(Duration.ofMillis(1))
        .maximumExpectedValue(Duration.ofSeconds(30))
        .register(meters)
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  private Counter counter(String name, String description, TypeUrl type) {
    return Counter.builder(name).description(description).tag("type", type.shortName()).register(meters);
  }
}
