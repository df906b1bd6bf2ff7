package io.xdsproxy.app.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.OutputStreamAppender;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.xdsproxy.core.ClientStrings;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * What the two encoders write for events logged through SLF4J's API onto logback, as the proxy logs
 * them.
 */
class LineEncoderTest {

  private static final String AWKWARD =
      "a \"quoted\" name,\na second line\tand a tab, a \\ backslash, \u0001, é, \u2028";

  private final ByteArrayOutputStream written = new ByteArrayOutputStream();

  /**
   * A logger named {@code name} that writes only through {@code encoder}, into {@link #written}.
   */
  private Logger loggerWritingWith(String name, LineEncoder encoder) {
    LoggerContext context = (LoggerContext) LoggerFactory.getILoggerFactory();
    encoder.setContext(context);
    encoder.start();
    OutputStreamAppender<ILoggingEvent> appender = new OutputStreamAppender<>();
    appender.setContext(context);
    appender.setEncoder(encoder);
    appender.setOutputStream(written);
    appender.start();
    Logger logger = context.getLogger(name);
    logger.setAdditive(false);
    logger.setLevel(Level.DEBUG);
    logger.addAppender(appender);
    return logger;
  }

  private String output() {
    return written.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aJsonLineEscapesQuotesNewlinesAndControlCharactersAndStaysOneLine() {
    Logger log = loggerWritingWith("io.xdsproxy.downstream.xds.SomeStream", new JsonLineEncoder());

    log.atWarn()
        .addKeyValue("node", AWKWARD)
        .addKeyValue("group", "g1")
        .setCause(new IllegalStateException("bad \"resource\"\nsecond line"))
        .log("NACK from node '{}': {}", "n1", AWKWARD);

    assertThat(output()).endsWith("\n");
    assertThat(output().lines()).as(output()).hasSize(1);
    JsonObject line = JsonParser.parseString(output()).getAsJsonObject();
    assertThat(line.get("time").getAsString())
        .matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z");
    assertThat(line.get("level").getAsString()).isEqualTo("WARN");
    assertThat(line.get("logger").getAsString())
        .as("in full")
        .isEqualTo("io.xdsproxy.downstream.xds.SomeStream");
    assertThat(line.get("thread").getAsString()).isEqualTo(Thread.currentThread().getName());
    assertThat(line.get("message").getAsString()).isEqualTo("NACK from node 'n1': " + AWKWARD);
    assertThat(line.get("node").getAsString()).isEqualTo(AWKWARD);
    assertThat(line.get("group").getAsString()).isEqualTo("g1");
    assertThat(line.get("exception").getAsString())
        .startsWith("java.lang.IllegalStateException: bad \"resource\"\nsecond line")
        .contains("\tat " + LineEncoderTest.class.getName());
  }

  @Test
  void aJsonLineEscapesWhatGsonLeavesThatSomeSplitterTakesForALineEndAndReadsBackTheSame() {
    Logger log = loggerWritingWith("io.xdsproxy.downstream.xds.SomeStream", new JsonLineEncoder());
    String client = "n1\u0085forged\u202Eevil\u007F\u009B";

    log.atWarn().addKeyValue("node", client).log("node '{}'", client);

    assertThat(output().codePoints().filter(ClientStrings::needsEscape).toArray())
        .as(output())
        .containsExactly('\n');
    assertThat(output()).contains("n1\\u0085forged\\u202eevil\\u007f\\u009b");
    JsonObject line = JsonParser.parseString(output()).getAsJsonObject();
    assertThat(line.get("node").getAsString()).isEqualTo(client);
    assertThat(line.get("message").getAsString()).isEqualTo("node '" + client + "'");
  }

  @Test
  void aTextLineEscapesTheClientsStringsInItsMessageFieldsAndExceptionAndStaysOneLine() {
    Logger log = loggerWritingWith("io.xdsproxy.downstream.xds.SomeStream", new TextLineEncoder());
    String forged = "n1\n2026-01-01T00:00:00.000Z ERROR [main] i.x.Forged - forged\r\u2028\u202E";

    log.atWarn()
        .addKeyValue("node", forged)
        .addKeyValue("group", "a\u0085b")
        .setCause(new IllegalStateException("bad node " + forged))
        .log("stream from node '{}'", forged);

    String[] lines = output().split("\n");
    assertThat(lines[0])
        .endsWith(
            " - stream from node 'n1\\n2026-01-01T00:00:00.000Z ERROR [main] i.x.Forged -"
                + " forged\\r\\u2028\\u202e' node=\"n1\\n2026-01-01T00:00:00.000Z ERROR [main]"
                + " i.x.Forged - forged\\r\\u2028\\u202e\" group=\"a\\u0085b\"");
    assertThat(lines[1])
        .isEqualTo(
            "java.lang.IllegalStateException: bad node n1\\n2026-01-01T00:00:00.000Z ERROR [main]"
                + " i.x.Forged - forged\\r\\u2028\\u202e");
    assertThat(lines[2]).startsWith("\tat ");
    assertThat(output().codePoints().filter(ClientStrings::needsEscape))
        .as("only the line ends and the stack trace's tabs")
        .containsOnly((int) '\n', (int) '\t');
  }

  @Test
  void aMessageOrFieldTooLongIsCut() {
    Logger log = loggerWritingWith("io.xdsproxy.downstream.xds.SomeStream", new TextLineEncoder());

    log.atInfo().addKeyValue("group", "g".repeat(1_000_000)).log("{}", "m".repeat(1_000_000));

    assertThat(output())
        .hasSizeLessThan(LineEncoder.MESSAGE + LineEncoder.FIELD + 200)
        .contains("m…(+" + (1_000_000 - LineEncoder.MESSAGE) + " chars)")
        .contains("g…(+" + (1_000_000 - LineEncoder.FIELD) + " chars)");
  }

  @Test
  void aJsonLineKeepsItsOwnFieldsAndNumbersAndBooleansAsJsonHasThem() {
    Logger log = loggerWritingWith("io.xdsproxy.downstream.xds.SomeStream", new JsonLineEncoder());

    log.atInfo()
        .addKeyValue("message", "not the message")
        .addKeyValue("streams", 42)
        .addKeyValue("ready", true)
        .addKeyValue("ratio", Double.NaN)
        .addKeyValue("peer", (Object) null)
        .log("the message");

    JsonObject line = JsonParser.parseString(output()).getAsJsonObject();
    assertThat(line.get("message").getAsString()).isEqualTo("the message");
    assertThat(line.get("kv_message").getAsString()).isEqualTo("not the message");
    assertThat(line.get("streams").getAsJsonPrimitive().isNumber()).isTrue();
    assertThat(line.get("streams").getAsInt()).isEqualTo(42);
    assertThat(line.get("ready").getAsBoolean()).isTrue();
    assertThat(line.get("ratio").getAsString()).as("not a JSON number").isEqualTo("NaN");
    assertThat(line.get("peer").isJsonNull()).isTrue();
    assertThat(line.has("exception")).isFalse();
  }

  @Test
  void aTextLineHasTheUtcTimeLevelThreadLoggerMessageAndFieldsThenTheStackTrace() {
    Logger log = loggerWritingWith("io.xdsproxy.downstream.xds.SomeStream", new TextLineEncoder());

    log.atError()
        .addKeyValue("node", "n1")
        .addKeyValue("group", "a \"b\" c")
        .addKeyValue("type", "")
        .setCause(new IllegalStateException("broken"))
        .log("stream failed");

    String[] lines = output().split("\n");
    assertThat(lines[0])
        .matches(
            "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z ERROR \\["
                + Thread.currentThread().getName()
                + "\\] i\\.xdsproxy\\.downstream\\.xds\\.SomeStream - stream failed node=n1 group=\"a \\\\\"b\\\\\" c\" type=\"\"");
    assertThat(lines[1]).isEqualTo("java.lang.IllegalStateException: broken");
    assertThat(lines[2]).startsWith("\tat " + LineEncoderTest.class.getName());
  }
}
