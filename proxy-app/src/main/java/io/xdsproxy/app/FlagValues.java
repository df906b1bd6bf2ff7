package io.xdsproxy.app;

import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.app.ProxyConfig.Setting;
import io.xdsproxy.upstream.grpc.TlsFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How a flag's value is read: ports, counts, durations, booleans and the files TLS needs, each
 * refused with a message naming where it was given ({@link Setting#where}).
 */
final class FlagValues {

  private FlagValues() {}

  /** The PEM certificate file a setting names, checked to hold certificates. */
  static Path certificates(Setting setting) throws ConfigException {
    Path file = Path.of(setting.value());
    try {
      TlsFiles.certificates(file);
    } catch (IOException e) {
      throw new ConfigException(setting.where() + ": " + e.getMessage());
    }
    return file;
  }

  /** A file that exists and can be read. */
  static Path readable(Setting setting) throws ConfigException {
    Path file = Path.of(setting.value());
    if (!java.nio.file.Files.isReadable(file)) {
      throw new ConfigException(setting.where() + ": cannot read " + file);
    }
    return file;
  }

  /**
   * The PEM private key file a setting names, checked to hold a key the proxy reads (see
   * TlsFiles#privateKey).
   */
  static Path privateKey(Setting setting) throws ConfigException {
    Path file = Path.of(setting.value());
    try {
      TlsFiles.privateKey(file);
    } catch (IOException e) {
      throw new ConfigException(setting.where() + ": " + e.getMessage());
    }
    return file;
  }

  static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  /** The value of {@code key}'s setting, which must be {@code true} or {@code false}. */
  static boolean trueOrFalse(Setting setting, String key) throws ConfigException {
    return switch (setting.value()) {
      case "true" -> true;
      case "false" -> false;
      default ->
          throw new ConfigException(
              setting.where()
                  + ": "
                  + key
                  + " '"
                  + setting.value()
                  + "' is neither true nor false");
    };
  }

  static int port(Setting setting) throws ConfigException {
    try {
      int port = Integer.parseInt(setting.value());
      if (port >= 0 && port <= 65535) {
        return port;
      }
    } catch (NumberFormatException e) {
      // falls through to the error below
    }
    throw new ConfigException(
        setting.where() + ": '" + setting.value() + "' is not a port number (0-65535)");
  }

  /** A whole number of at least {@code least} (a limit: 0 means none where a limit allows it). */
  static int count(Setting setting, int least) throws ConfigException {
    try {
      int count = Integer.parseInt(setting.value());
      if (count >= least) {
        return count;
      }
    } catch (NumberFormatException e) {
      // falls through to the error below
    }
    throw new ConfigException(
        setting.where() + ": '" + setting.value() + "' is not a whole number of at least " + least);
  }

  static Duration duration(Setting setting) throws ConfigException {
    Matcher matcher = DURATION.matcher(setting.value());
    if (!matcher.matches()) {
      throw new ConfigException(
          setting.where()
              + ": '"
              + setting.value()
              + "' is not a duration such as 500ms, 15s, 5m or 1h");
    }
    long amount = Long.parseLong(matcher.group(1));
    Duration duration =
        switch (matcher.group(2)) {
          case "ms" -> Duration.ofMillis(amount);
          case "s" -> Duration.ofSeconds(amount);
          case "m" -> Duration.ofMinutes(amount);
          default -> Duration.ofHours(amount);
        };
    if (duration.isZero()) {
      throw new ConfigException(setting.where() + ": the duration must be more than zero");
    }
    return duration;
  }

  static final Pattern DURATION = Pattern.compile("(\\d{1,9})(ms|s|m|h)");
}
