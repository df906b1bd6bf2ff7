package io.xdsproxy.app.logging;

import ch.qos.logback.classic.pattern.TargetLengthBasedClassNameAbbreviator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import io.xdsproxy.core.ClientStrings;
import java.util.List;
import org.slf4j.event.KeyValuePair;

/**
 * {@code --log-format text}: {@code 2025-01-31T12:00:00.123Z WARN [thread] i.x.d.xds.ClientStream -
 * message node=n1 group=g1}, then the stack trace on the lines below if there is one. A field's
 * value is quoted, logfmt's way, when a space, a quote or an equals sign in it would make the line
 * ambiguous. Named in {@code logback.xml}: the format before {@code Main} applies the flags.
 *
 * <p>A message, a field or an exception's message may quote a client's string, so each is escaped
 * ({@link ClientStrings#escaped}: CR, LF, every other control character, the line separators and
 * the bidirectional overrides) and cut ({@link LineEncoder#message}): an event is one line, its
 * stack trace aside, and no client can write a line of its own.
 */
public final class TextLineEncoder extends LineEncoder {

  /**
   * Package names shortened to their initials until the name fits, the class's own name kept whole.
   */
  private final TargetLengthBasedClassNameAbbreviator loggerNames =
      new TargetLengthBasedClassNameAbbreviator(36);

  @Override
  String line(ILoggingEvent event) {
    StringBuilder line =
        new StringBuilder(160)
            .append(time(event))
            .append(' ')
            .append(String.format("%-5s", event.getLevel()))
            .append(" [")
            .append(event.getThreadName())
            .append("] ")
            .append(loggerNames.abbreviate(event.getLoggerName()))
            .append(" - ")
            .append(ClientStrings.escaped(message(event)));
    List<KeyValuePair> pairs = event.getKeyValuePairs();
    if (pairs != null) {
      for (KeyValuePair pair : pairs) {
        line.append(' ')
            .append(ClientStrings.escaped(String.valueOf(pair.key)))
            .append('=')
            .append(value(field(pair.value)));
      }
    }
    line.append('\n');
    if (event.getThrowableProxy() != null) {
      line.append(ThrowableProxyUtil.asString(new EscapedThrowable(event.getThrowableProxy())))
          .append('\n');
    }
    return line.toString();
  }

  private static String value(String value) {
    if (!value.isEmpty()
        && value
            .codePoints()
            .noneMatch(
                c ->
                    Character.isWhitespace(c)
                        || c == '"'
                        || c == '='
                        || ClientStrings.needsEscape(c))) {
      return value;
    }
    return '"' + ClientStrings.escaped(value.replace("\\", "\\\\").replace("\"", "\\\"")) + '"';
  }
}
