package io.xdsproxy.downstream.xds;

import io.grpc.Metadata;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.xdsproxy.core.ClientStrings;
import io.xdsproxy.core.TypeUrl;
import java.time.Duration;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The downstream side's meters, named by Prometheus conventions once exported ({@code xds_} prefix,
 * {@code _total} for counters): open streams by protocol variant and service, and streams ended by
 * gRPC status; by type the requests, ACKs, NACKs, responses and bytes sent; streams ended or paced
 * by limit; and the fan-out latency, from an upstream update reaching the proxy to a response
 * carrying it written to a client, one observation per response so written (the histogram's top is
 * the last client reached).
 *
 * <p>Every label value known in advance (each service and variant served, each known type, each
 * limit, each status code) is registered at zero when the proxy starts: an idle replica exports the
 * series, so the autoscaler reads 0 streams rather than nothing, and a rate or an alert over a
 * counter sees its first increment.
 *
 * <p>No label takes a client's string without a bound on the values it may have: a type label is a
 * known type, one of the first {@value #MAX_OPAQUE_TYPES} opaque types clients named (cut to {@link
 * ClientStrings#LABEL} characters), or {@code other}.
 */
public final class StreamMetrics {

  /**
   * The values of {@code xds_downstream_limited_total}'s {@code limit} label, one per {@link
   * Limits} check.
   */
  static final List<String> LIMITS =
      List.of(
          "names_per_request",
          "name_length",
          "streams_per_group",
          "streams_per_node",
          "request_rate",
          "node_groups",
          "node_groups_per_client",
          "node_bytes",
          "node_metadata_bytes",
          "node_metadata_depth",
          "node_string_length",
          "upstream_names_bytes");

  /**
   * The values of {@code xds_downstream_denied_total}'s {@code reason} label: why a client was
   * refused what its identity does not entitle it to ({@link Access}); {@code client_status}: a
   * client status (CSDS) call whose caller nothing entitles to any stream's status ({@link
   * ClientStatusAccess}).
   */
  static final List<String> DENIALS =
      List.of("node_id", "identity", "upstream_node", "secrets", "client_status");

  /**
   * The opaque types that get series of their own: a client may name any well-formed type URL, one
   * request each, and a series per name would let it grow every scrape without end; the types past
   * these are counted as {@link #OTHER_TYPE}.
   */
  static final int MAX_OPAQUE_TYPES = 32;

  /** The type label of the opaque types past {@link #MAX_OPAQUE_TYPES}. */
  static final String OTHER_TYPE = "other";

  private final MeterRegistry meters;
  private final AtomicInteger opaqueTypes = new AtomicInteger();
  private final TypeMeters otherTypes;
  private final Map<String, AtomicInteger> open = new ConcurrentHashMap<>();
  private final Map<TypeUrl, TypeMeters> byType = new ConcurrentHashMap<>();
  private final Map<String, Counter> limited;
  private final Map<String, Counter> denied;
  private final Map<Status.Code, Counter> ended = new EnumMap<>(Status.Code.class);

  public StreamMetrics(MeterRegistry meters) {
    this.meters = meters;
    TypeUrl.known().forEach(this::of);
    this.otherTypes = typeMeters(OTHER_TYPE);
    this.limited =
        LIMITS.stream()
            .collect(
                Collectors.toUnmodifiableMap(
                    Function.identity(),
                    limit ->
                        Counter.builder("xds.downstream.limited")
                            .description(
                                "Downstream streams ended, or paced, for going past a limit")
                            .tag("limit", limit)
                            .register(meters)));
    this.denied =
        DENIALS.stream()
            .collect(
                Collectors.toUnmodifiableMap(
                    Function.identity(),
                    reason ->
                        Counter.builder("xds.downstream.denied")
                            .description(
                                "Downstream streams and polls refused for what the client's verified"
                                    + " identity does not entitle it to")
                            .tag("reason", reason)
                            .register(meters)));
    for (Status.Code code : Status.Code.values()) {
      ended.put(
          code,
          Counter.builder("xds.downstream.streams.ended")
              .description("Downstream xDS streams ended, by the gRPC status they ended with")
              .tag("status", code.name())
              .register(meters));
    }
  }

  /**
   * Streams of {@code protocol} ("SotW", "Delta") are served on {@code service} ("ads" or a type):
   * counted from zero.
   */
  void serves(String protocol, String service) {
    streams(protocol.toLowerCase(Locale.ROOT), service);
  }

  /**
   * A stream of {@code protocol} ("sotw", "delta") on {@code service} ("ads" or a type) was
   * identified.
   */
  void opened(String protocol, String service) {
    streams(protocol, service).incrementAndGet();
  }

  void closed(String protocol, String service) {
    streams(protocol, service).decrementAndGet();
  }

  private AtomicInteger streams(String protocol, String service) {
    return open.computeIfAbsent(
        protocol + "/" + service,
        key -> {
          AtomicInteger count = new AtomicInteger();
          Gauge.builder("xds.downstream.streams", count, AtomicInteger::get)
              .description("Open downstream xDS streams")
              .tag("protocol", protocol)
              .tag("service", service)
              .register(meters);
          return count;
        });
  }

  /**
   * Counts each stream of {@code services} as it ends, by the status the transport ended it with:
   * one the client cancelled, one the proxy ended (a limit, a bad request, the drain) and one gRPC
   * ended by itself (a request larger than the limit) alike, whether or not it got as far as naming
   * its node. Other calls on the port (health, CSDS, reflection) are not counted.
   */
  public ServerStreamTracer.Factory endedStreams(Collection<ServerServiceDefinition> services) {
    Set<String> methods =
        services.stream()
            .flatMap(service -> service.getMethods().stream())
            .map(method -> method.getMethodDescriptor().getFullMethodName())
            .collect(Collectors.toUnmodifiableSet());
    ServerStreamTracer counting =
        new ServerStreamTracer() {
          @Override
          public void streamClosed(Status status) {
            ended.get(status.getCode()).increment();
          }
        };
    ServerStreamTracer notCounting = new ServerStreamTracer() {};
    return new ServerStreamTracer.Factory() {
      @Override
      public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
        return methods.contains(fullMethodName) ? counting : notCounting;
      }
    };
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
   * A stream was ended, or paced, for going past the limit {@code limit}, one of {@link #LIMITS}.
   */
  void limited(String limit) {
    Counter counter = limited.get(limit);
    if (counter == null) {
      throw new IllegalArgumentException("limit '" + limit + "' is not one of " + LIMITS);
    }
    counter.increment();
  }

  /** A stream was refused for {@code reason}, one of {@link #DENIALS}. */
  void denied(String reason) {
    Counter counter = denied.get(reason);
    if (counter == null) {
      throw new IllegalArgumentException("reason '" + reason + "' is not one of " + DENIALS);
    }
    counter.increment();
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

  /**
   * One type's meters, registered once: every response of every stream counts here, so no lookup
   * per count.
   */
  private record TypeMeters(
      Counter requests,
      Counter acks,
      Counter nacks,
      Counter responses,
      Counter bytes,
      Timer fanOut) {}

  private TypeMeters of(TypeUrl type) {
    TypeMeters found =
        byType.computeIfAbsent(
            type,
            t ->
                t.isKnown()
                        || (opaqueTypes.get() < MAX_OPAQUE_TYPES
                            && opaqueTypes.incrementAndGet() <= MAX_OPAQUE_TYPES)
                    ? typeMeters(ClientStrings.label(t.shortName()))
                    : null);
    return found != null ? found : otherTypes;
  }

  private TypeMeters typeMeters(String label) {
    return new TypeMeters(
        counter("xds.downstream.requests", "Requests received from downstream clients", label),
        counter("xds.downstream.acks", "Responses downstream clients accepted", label),
        counter("xds.downstream.nacks", "Responses downstream clients rejected", label),
        counter("xds.downstream.responses", "Responses sent to downstream clients", label),
        counter(
            "xds.downstream.sent.bytes",
            "Encoded bytes of the responses sent to downstream clients",
            label),
        Timer.builder("xds.fanout.latency")
            .description(
                "From an upstream update reaching the proxy to a response carrying it written to a client")
            .tag("type", label)
            .publishPercentileHistogram()
            .minimumExpectedValue(Duration.ofMillis(1))
            .maximumExpectedValue(Duration.ofSeconds(30))
            .register(meters));
  }

  private Counter counter(String name, String description, String type) {
    return Counter.builder(name).description(description).tag("type", type).register(meters);
  }
}
