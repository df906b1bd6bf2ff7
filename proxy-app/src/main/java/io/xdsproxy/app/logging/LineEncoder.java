package io.xdsproxy.app.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.encoder.EncoderBase;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * One log event as one line (a JSON line's stack trace is inside the line; a text line's follows
 * it), UTF-8, no header or footer: what a container runtime collects from stdout line by line.
 */
abstract class LineEncoder extends EncoderBase<ILoggingEvent> {

  /** ISO-8601 in UTC with milliseconds, as log pipelines parse without being told a format. */
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

  static String time(ILoggingEvent event) {
    return TIME.format(Instant.ofEpochMilli(event.getTimeStamp()));
  }

  /** The event's line, ending in a newline. */
  abstract String line(ILoggingEvent event);

  @Override
  public final byte[] encode(ILoggingEvent event) {
    return line(event).getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public final byte[] headerBytes() {
    return null;
  }

  @Override
  public final byte[] footerBytes() {
    return null;
  }
}
