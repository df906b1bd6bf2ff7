package io.xdsproxy.downstream.xds;

import io.grpc.Status;
import io.xdsproxy.core.LimitedLog;
import io.xdsproxy.core.Ticker;
import io.xdsproxy.core.TypeUrl;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * A stream's events counted in {@link StreamMetrics} and logged, under the logger of {@link
 * ClientStream} (and of {@link SotwStream} for stale requests), each kind of line limited.
 */
final class MeteredStreamEvents implements StreamEvents {

  private static final Logger log = LoggerFactory.getLogger(ClientStream.class);
  private static final Logger sotwLog = LoggerFactory.getLogger(SotwStream.class);
  // A reconnect storm or a client failing in a loop must not flood the log: each kind of line is
  // limited.
  private static final LimitedLog opens = LimitedLog.of(log, Level.INFO);
  private static final LimitedLog closes = LimitedLog.of(log, Level.INFO);
  private static final LimitedLog failures = LimitedLog.of(log, Level.WARN);
  private static final LimitedLog errors =
      LimitedLog.of(log, Level.ERROR, 20, Duration.ofSeconds(10));

  /** Streams ended or paced for a limit: a flood of them must not flood the log. */
  private static final LimitedLog refusals = LimitedLog.of(log, Level.WARN);

  /** NACKs from clients. */
  private static final LimitedLog nacks = LimitedLog.of(log, Level.WARN);

  private final StreamMetrics metrics;

  /** The node groups' ticker, which stamped the updates: the fan-out latency is read against it. */
  private final Ticker ticker;

  MeteredStreamEvents(StreamMetrics metrics, Ticker ticker) {
    this.metrics = metrics;
    this.ticker = ticker;
  }

  @Override
  public void opened(ClientStream<?, ?> stream) {
    metrics.opened(stream.protocol(), stream.service());
    opens.log(
        stream::fields,
        "stream opened: node '{}' group {} from {} ({})",
        stream.node().getId(),
        stream.group().key(),
        stream.peer(),
        stream.variant());
  }

  @Override
  public void closed(ClientStream<?, ?> stream, String why) {
    metrics.closed(stream.protocol(), stream.service());
    if (why != null) {
      closes.log(
          stream::fields,
          "stream closed: node '{}' group {} from {}: {}",
          stream.node().getId(),
          stream.group().key(),
          stream.peer(),
          why);
    }
  }

  @Override
  public void request(ClientStream<?, ?> stream, TypeUrl type, Reply reply) {
    metrics.request(type);
    switch (reply) {
      case ACK -> metrics.ack(type);
      case NACK -> metrics.nack(type);
      case NONE -> {}
    }
  }

  @Override
  public void stale(ClientStream<?, ?> stream, TypeUrl type, String nonce) {
    if (!sotwLog.isDebugEnabled()) {
      return; // a stale request is routine: its fields are not built for nothing
    }
    stream
        .fields()
        .type(type)
        .addTo(sotwLog.atDebug())
        .log(
            "node '{}' {}: ignoring request with stale nonce {}",
            stream.node().getId(),
            type.shortName(),
            nonce);
  }

  @Override
  public void nacked(ClientStream<?, ?> stream, TypeUrl type, String nonce, String message) {
    nacks.log(
        () -> stream.fields().type(type),
        "NACK from node '{}' group {} for {} (nonce {}): {}",
        stream.node().getId(),
        stream.group().key(),
        type.shortName(),
        nonce,
        message);
  }

  @Override
  public void responseSent(ClientStream<?, ?> stream, TypeUrl type, int bytes) {
    metrics.response(type, bytes);
  }

  @Override
  public void fannedOut(ClientStream<?, ?> stream, TypeUrl type, long receivedAt) {
    metrics.fannedOut(type, ticker.nanos() - receivedAt);
  }

  @Override
  public void refused(ClientStream<?, ?> stream, String limit, String why) {
    metrics.limited(limit);
    refusals.log(
        stream::fields, "refused {} stream from {}: {}", stream.variant(), stream.peer(), why);
  }

  @Override
  public void ungroupable(ClientStream<?, ?> stream, String why) {
    failures.log(
        stream::fields, "refused {} stream from {}: {}", stream.variant(), stream.peer(), why);
  }

  @Override
  public void denied(ClientStream<?, ?> stream, String reason, String why) {
    metrics.denied(reason);
    refusals.log(
        stream::fields, "denied {} stream from {}: {}", stream.variant(), stream.peer(), why);
  }

  @Override
  public void paced(ClientStream<?, ?> stream, int rate) {
    metrics.limited("request_rate");
    refusals.log(
        stream::fields,
        "node '{}' group {}: requests come faster than {} a second; the stream is read at that rate",
        stream.nodeId(),
        stream.group() == null ? "?" : stream.group().key(),
        rate);
  }

  @Override
  public void failed(ClientStream<?, ?> stream, Status status) {
    failures.log(
        stream::fields,
        "{} stream from {} (node '{}') ended: {}",
        stream.variant(),
        stream.peer(),
        stream.node() == null ? "?" : stream.node().getId(),
        status.getDescription());
  }

  @Override
  public void crashed(ClientStream<?, ?> stream, RuntimeException e) {
    errors.log(
        stream::fields,
        "{} stream from {} (node '{}') failed; closing it",
        stream.variant(),
        stream.peer(),
        stream.node() == null ? "?" : stream.node().getId(),
        e);
  }
}
