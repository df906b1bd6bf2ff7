package io.xdsproxy.app.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.encoder.EncoderBase;
import io.xdsproxy.core.ClientStrings;
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

  /**
   * The most characters of a message written: a backstop, for a client's string that no one cut
   * before logging it (a node id or group key is cut at its source, {@link
   * io.xdsproxy.core.LogFields}); a stream's lines are a few hundred characters.
   */
  static final int MESSAGE = 16 * 1024;

  /** The most characters of a field's value written: a backstop, as {@link #MESSAGE}. */
  static final int FIELD = 1024;

  static String time(ILoggingEvent event) {
    return TIME.format(Instant.ofEpochMilli(event.getTimeStamp()));
  }

  /** The event's formatted message, cut to {@link #MESSAGE} characters. */
  static String message(ILoggingEvent event) {
    return ClientStrings.bounded(event.getFormattedMessage(), MESSAGE);
  }

  /** A field's value as a string, cut to {@link #FIELD} characters. */
  static String field(Object value) {
    return ClientStrings.bounded(String.valueOf(value), FIELD);
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
