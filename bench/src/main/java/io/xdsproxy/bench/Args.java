package io.xdsproxy.bench;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * A bench program's options, given as {@code --name value} pairs: each is read once, with its
 * default, and {@link #done} refuses any given that nothing read (a misspelt option must not run an
 * hour's measurement with its default).
 */
final class Args {

  private final Map<String, String> given = new LinkedHashMap<>();

  Args(String[] args) {
    for (int i = 0; i < args.length; i++) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --option value, got " + args[i]);
      }
      given.put(args[i].substring(2), args[++i]);
    }
  }

  /**
   * The options {@code parse} makes of {@code args}; a program given options it cannot use says why
   * and exits with status 2, as the proxy's own command line does.
   */
  static <T> T parseOrExit(String program, String[] args, Function<String[], T> parse) {
    try {
      return parse.apply(args);
    } catch (IllegalArgumentException e) {
      System.err.println(program + ": " + e.getMessage());
      System.exit(2);
      throw e;
    }
  }

  int integer(String name, int otherwise) {
    return read(name, Integer::parseInt, otherwise);
  }

  double decimal(String name, double otherwise) {
    return read(name, Double::parseDouble, otherwise);
  }

  String text(String name, String otherwise) {
    return read(name, Function.identity(), otherwise);
  }

  Path path(String name, String otherwise) {
    return Path.of(text(name, otherwise));
  }

  Optional<Path> optionalPath(String name) {
    return Optional.ofNullable(given.remove(name)).map(Path::of);
  }

  /** Words separated by spaces, such as JVM options. */
  List<String> words(String name, String otherwise) {
    String value = text(name, otherwise).trim();
    return value.isEmpty() ? List.of() : Arrays.asList(value.split("\\s+"));
  }

  Duration seconds(String name, long otherwise) {
    return Duration.ofSeconds(read(name, Long::parseLong, otherwise));
  }

  /** Refuses the options given that were not read. */
  void done() {
    if (!given.isEmpty()) {
      throw new IllegalArgumentException("unknown options " + given.keySet());
    }
  }

  private <T> T read(String name, Function<String, T> parse, T otherwise) {
    String value = given.remove(name);
    if (value == null) {
      return otherwise;
    }
    try {
      return parse.apply(value);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--" + name + " '" + value + "' is not a number");
    }
  }
}
