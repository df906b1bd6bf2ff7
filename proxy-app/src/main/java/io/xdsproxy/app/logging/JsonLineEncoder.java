package io.xdsproxy.app.logging;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import com.google.gson.stream.JsonWriter;
import io.xdsproxy.core.ClientStrings;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.event.KeyValuePair;

/**
 * {@code --log-format json}: one flat JSON object per line, as Loki, Elasticsearch and Cloud
 * Logging ingest without a parsing rule: {@code time} (ISO-8601, UTC, milliseconds), {@code level},
 * {@code logger}, {@code thread}, {@code message} (formatted), each key-value pair of the event as
 * a field of its own ({@code node}, {@code group}, {@code type}, {@code peer}), and {@code
 * exception}, the stack trace as one string, when there is one. Logback's own JSON encoder nests
 * the pairs in a list, which a pipeline cannot index by name.
 *
 * <p>A pair whose key is one of the line's own fields is written as {@code kv_<key>} rather than
 * overwrite it; of pairs with the same key, the last is kept. Numbers and booleans stay JSON
 * numbers and booleans; any other value is written as its string.
 *
 * <p>A message or a field may quote a client's string: each is cut ({@link LineEncoder#message},
 * {@link LineEncoder#field}), and every character that some line splitter takes for the end of a
 * line, or that disguises one ({@link ClientStrings#needsEscape}), is written as a JSON escape:
 * Gson escapes CR, LF and the other C0 controls and U+2028/U+2029, not NEL (U+0085, a line end to
 * Unicode-aware splitters), DEL, the C1 controls or the bidirectional overrides, which are escaped
 * here. The escapes are JSON's own, so a parser reads the client's string back as it was.
 */
public final class JsonLineEncoder extends LineEncoder {

  private static final Set<String> OWN_FIELDS =
      Set.of("time", "level", "logger", "thread", "message", "exception");

  @Override
  String line(ILoggingEvent event) {
    StringWriter line = new StringWriter(256);
    try (JsonWriter json = new JsonWriter(line)) {
      json.setSerializeNulls(true);
      json.beginObject();
      json.name("time").value(time(event));
      json.name("level").value(event.getLevel().toString());
      json.name("logger").value(event.getLoggerName());
      json.name("thread").value(event.getThreadName());
      json.name("message").value(message(event));
      for (Map.Entry<String, Object> field : fields(event.getKeyValuePairs()).entrySet()) {
        value(json.name(field.getKey()), field.getValue());
      }
      if (event.getThrowableProxy() != null) {
        json.name("exception").value(ThrowableProxyUtil.asString(event.getThrowableProxy()));
      }
      json.endObject();
    } catch (IOException e) {
      throw new UncheckedIOException("a StringWriter does not fail", e);
    }
    return escapeRest(line.toString()) + '\n';
  }

  /**
   * {@code json} with every character to escape that Gson wrote as it is written as {@code \}{@code
   * uXXXX}: such a character is inside a string (keys and values are the only text of a line),
   * where the escape means the same character.
   */
  private static String escapeRest(String json) {
    if (json.codePoints().noneMatch(ClientStrings::needsEscape)) {
      return json;
    }
    StringBuilder out = new StringBuilder(json.length() + 16);
    json.codePoints()
        .forEach(
            c -> {
              if (ClientStrings.needsEscape(c)) {
                for (char unit : Character.toChars(c)) {
                  out.append("\\u").append(HexFormat.of().toHexDigits(unit));
                }
              } else {
                out.appendCodePoint(c);
              }
            });
    return out.toString();
  }

  private static Map<String, Object> fields(List<KeyValuePair> pairs) {
    Map<String, Object> fields = new LinkedHashMap<>();
    if (pairs != null) {
      for (KeyValuePair pair : pairs) {
        String key = String.valueOf(pair.key);
        fields.put(OWN_FIELDS.contains(key) ? "kv_" + key : key, pair.value);
      }
    }
    return fields;
  }

  private static void value(JsonWriter json, Object value) throws IOException {
    if (value == null) {
      json.nullValue();
    } else if (value instanceof Boolean bool) {
      json.value(bool);
    } else if (value instanceof Number number && Double.isFinite(number.doubleValue())) {
      json.value(number);
    } else {
      json.value(field(value));
    }
  }
}
