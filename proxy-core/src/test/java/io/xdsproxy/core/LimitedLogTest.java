package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

class LimitedLogTest {

  private final AtomicLong now = new AtomicLong();
  private final LimitedLog log =
      new LimitedLog(
          LoggerFactory.getLogger(LimitedLogTest.class),
          Level.INFO,
          3,
          Duration.ofSeconds(10),
          now::get);

  @Test
  void aStormIsCutToTheLimitAndTheNextLineCountsWhatWasLeftOut() {
    long[] storm = IntStream.range(0, 1000).mapToLong(i -> log.admit()).toArray();

    assertThat(storm).startsWith(0, 0, 0);
    assertThat(IntStream.range(3, 1000).mapToLong(i -> storm[i])).containsOnly(-1L);

    now.addAndGet(Duration.ofSeconds(10).toNanos());
    assertThat(log.admit())
        .as("the first line of the next period reports the storm")
        .isEqualTo(997);
    assertThat(log.admit()).isZero();
  }

  @Test
  void linesWithinTheLimitAllGoThrough() {
    for (int period = 0; period < 5; period++) {
      assertThat(IntStream.range(0, 3).mapToLong(i -> log.admit())).containsOnly(0L);
      now.addAndGet(Duration.ofSeconds(11).toNanos());
    }
  }

  @Test
  void logsWithoutFailingWhenOverTheLimit() {
    IntStream.range(0, 10).forEach(i -> log.log("line {} of node '{}'", i, "n1"));
    now.addAndGet(Duration.ofSeconds(10).toNanos());
    log.log("after the storm");
    assertThat(log.admit()).isZero();
  }

  @Test
  void aLinePassesItsFieldsOnAsKeyValuePairsAndTheCountOfLeftOutLinesHasNone() {
    ch.qos.logback.classic.Logger logger =
        (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("LimitedLogTest.fields");
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    logger.addAppender(appender);
    LimitedLog limited = new LimitedLog(logger, Level.WARN, 1, Duration.ofSeconds(10), now::get);
    LogFields fields =
        LogFields.NONE.node("n1").group(new NodeGroupKey("g1")).type(TypeUrl.CLUSTER).peer(null);

    limited.log(fields, "NACK from node '{}'", "n1");
    limited.log(fields, "left out");
    now.addAndGet(Duration.ofSeconds(10).toNanos());
    limited.log(fields, "NACK from node '{}' again", "n1");

    assertThat(appender.list)
        .extracting(ILoggingEvent::getFormattedMessage)
        .containsExactly(
            "NACK from node 'n1'",
            "(1 similar lines left out in the last 10 s)",
            "NACK from node 'n1' again");
    assertThat(appender.list.get(0).getKeyValuePairs())
        .extracting(pair -> pair.key + "=" + pair.value)
        .as("a field not known (the peer) is left out")
        .containsExactly("node=n1", "group=g1", "type=" + TypeUrl.CLUSTER.shortName());
    assertThat(appender.list.get(1).getKeyValuePairs()).isNullOrEmpty();
    assertThat(appender.list.get(2).getKeyValuePairs())
        .isEqualTo(appender.list.get(0).getKeyValuePairs());
  }
}
