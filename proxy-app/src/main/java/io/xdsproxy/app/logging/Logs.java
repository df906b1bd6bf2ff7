package io.xdsproxy.app.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.jul.LevelChangePropagator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.Encoder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.slf4j.LoggerFactory;

/**
 * The proxy's logging as its flags and {@code /logging} set it: every line to stdout in one format,
 * and a level for the root logger and for any logger named. Logback is the SLF4J backend; grpc-java
 * logs through JUL, bridged to SLF4J in {@code Main}, and JUL's levels follow logback's so that a
 * line no one will see is dropped before the bridge formats it.
 */
public final class Logs {

  /**
   * How the root logger is named in {@code --log-level} (a bare level) and in {@link #levels()}.
   */
  public static final String ROOT = "root";

  /**
   * The levels of {@code --log-level} and {@code /logging}; logback knows more (all, off), which
   * are not offered.
   */
  public static final List<String> LEVELS = List.of("error", "warn", "info", "debug", "trace");

  /** A Java logger name: package names and a class name, separated by dots. */
  private static final Pattern LOGGER_NAME =
      Pattern.compile("[A-Za-z_$][\\w$]*(\\.[A-Za-z_$][\\w$]*)*");

  private Logs() {}

  /**
   * Writes every line from now on to stdout with {@code encoder}, in place of whatever wrote them
   * before, and sets the levels: the root's to info, then each of {@code levels} in order, a bare
   * level for the root, {@code logger=level} for that logger.
   *
   * @throws IllegalArgumentException for a level not of {@link #LEVELS} or a malformed logger name
   *     (the flags are checked before, as ProxyConfig parses them)
   */
  public static void configure(Encoder<ILoggingEvent> encoder, List<String> levels) {
    LoggerContext context = context();
    followedByJul(context);
    ConsoleAppender<ILoggingEvent> console = new ConsoleAppender<>();
    console.setContext(context);
    console.setName("stdout");
    console.setTarget("System.out");
    encoder.setContext(context);
    encoder.start();
    console.setEncoder(encoder);
    console.start();
    Logger root = context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    root.detachAndStopAllAppenders();
    root.addAppender(console);
    root.setLevel(Level.INFO);
    for (String setting : levels) {
      int equals = setting.indexOf('=');
      setLevel(equals < 0 ? ROOT : setting.substring(0, equals), setting.substring(equals + 1));
    }
  }

  /**
   * Sets {@code logger}'s level ({@link #ROOT} for the root's), which its descendants without a
   * level of their own follow.
   *
   * @throws IllegalArgumentException with {@link #problem}'s message, for a level not of {@link
   *     #LEVELS} or a malformed logger name
   */
  public static void setLevel(String logger, String level) {
    Optional<String> problem = problem(logger, level);
    if (problem.isPresent()) {
      throw new IllegalArgumentException(problem.get());
    }
    context()
        .getLogger(logger.equals(ROOT) ? org.slf4j.Logger.ROOT_LOGGER_NAME : logger)
        .setLevel(level(level).orElseThrow());
  }

  /** What is wrong with setting {@code logger} to {@code level}, naming it; empty if nothing is. */
  public static Optional<String> problem(String logger, String level) {
    if (level(level).isEmpty()) {
      return Optional.of(
          "unknown log level '"
              + level
              + "' for "
              + logger
              + ": one of "
              + String.join(", ", LEVELS));
    }
    if (!logger.equals(ROOT) && !LOGGER_NAME.matcher(logger).matches()) {
      return Optional.of("'" + logger + "' is not a logger name (a package, or package.Class)");
    }
    return Optional.empty();
  }

  /** {@code name} as a level of {@link #LEVELS}, in any case; empty if it is none. */
  public static Optional<Level> level(String name) {
    String lower = name.toLowerCase(Locale.ROOT);
    return LEVELS.contains(lower) ? Optional.of(Level.toLevel(lower)) : Optional.empty();
  }

  /**
   * Each logger with a level of its own, the root first, then by name: the others follow their
   * parent's.
   */
  public static Map<String, String> levels() {
    Map<String, String> levels = new LinkedHashMap<>();
    for (Logger logger : context().getLoggerList()) {
      if (logger.getLevel() != null) {
        String name =
            logger.getName().equals(org.slf4j.Logger.ROOT_LOGGER_NAME) ? ROOT : logger.getName();
        levels.put(name, logger.getLevel().toString().toLowerCase(Locale.ROOT));
      }
    }
    return levels;
  }

  private static LoggerContext context() {
    if (!(LoggerFactory.getILoggerFactory() instanceof LoggerContext context)) {
      throw new IllegalStateException(
          "SLF4J is not bound to logback but to "
              + LoggerFactory.getILoggerFactory().getClass()
              + ": is another SLF4J backend on the class path?");
    }
    return context;
  }

  /**
   * JUL's levels follow logback's, whatever configuration file was read before (logback.xml has it
   * too).
   */
  private static void followedByJul(LoggerContext context) {
    if (context.getCopyOfListenerList().stream()
        .noneMatch(LevelChangePropagator.class::isInstance)) {
      LevelChangePropagator propagator = new LevelChangePropagator();
      propagator.setContext(context);
      propagator.setResetJUL(true);
      propagator.start();
      context.addListener(propagator);
    }
  }
}
