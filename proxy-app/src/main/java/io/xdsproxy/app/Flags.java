package io.xdsproxy.app;

import static io.xdsproxy.app.FlagValues.count;
import static io.xdsproxy.app.FlagValues.duration;
import static io.xdsproxy.app.FlagValues.max;
import static io.xdsproxy.app.FlagValues.port;
import static io.xdsproxy.app.FlagValues.trueOrFalse;
import static io.xdsproxy.app.Flags.Flag.commandLine;
import static io.xdsproxy.app.Flags.Flag.list;
import static io.xdsproxy.app.Flags.Flag.single;

import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.app.ProxyConfig.LogFormat;
import io.xdsproxy.app.ProxyConfig.Setting;
import io.xdsproxy.app.logging.Logs;
import io.xdsproxy.downstream.xds.Limits;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.grpc.Backoff;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.ToIntFunction;
import java.util.stream.Stream;

/**
 * Every flag of the proxy, in one table: {@code --help}, the config file's keys and the README's
 * "Command line" section (checked by {@code ReadmeFlagsTest}) all come from {@link #ALL}. A new
 * flag is one {@link Flag} here, and a record component of {@link ProxyConfig} if it sets something
 * new.
 *
 * <p>The order of {@link #ALL} is the order {@code --help} lists the flags in and the order an
 * unknown config key's message lists the known ones in. Checks across keys (TLS files that need
 * each other, two listeners on one port) are {@link ProxyConfig#parse}'s, after every setting is
 * applied.
 */
final class Flags {

  private Flags() {}

  /** How a flag is given. */
  enum Kind {
    /**
     * On the command line only, not a config-file key ({@code --config}, {@code --help}, {@code
     * --version}).
     */
    COMMAND_LINE,
    /** One value; given again, the last wins. */
    SINGLE,
    /** Several values: a YAML list, or the flag given more than once, kept in order. */
    LIST
  }

  /** Sets what one flag says on a config. */
  @FunctionalInterface
  interface Apply {
    ProxyConfig apply(ProxyConfig config, Setting setting) throws ConfigException;
  }

  /**
   * One flag.
   *
   * @param name the flag without its dashes, which is also its config-file key
   * @param syntax its value as {@code --help} and the README show it ({@code D}, {@code
   *     sotw|delta}); empty for a flag without a value
   * @param shownDefault the default as {@code --help} and the README show it, the same string a
   *     user could give; empty when there is none, and the help text says what happens without it
   * @param help one line of {@code --help}, without the default
   * @param apply what the flag sets; {@code null} for {@link Kind#COMMAND_LINE} flags, which {@link
   *     Main} and {@link ProxyConfig#parse} handle themselves
   */
  record Flag(
      String name, String syntax, String shownDefault, String help, Kind kind, Apply apply) {

    boolean isKey() {
      return kind != Kind.COMMAND_LINE;
    }

    static Flag single(String name, String syntax, String shownDefault, String help, Apply apply) {
      return new Flag(name, syntax, shownDefault, help, Kind.SINGLE, apply);
    }

    /**
     * A flag setting one of the {@link Limits}, a whole number at least {@code least}; its default
     * is {@link Limits#DEFAULTS}'.
     */
    static Flag limit(
        String name,
        String help,
        int least,
        ToIntFunction<Limits> current,
        BiFunction<Limits, Integer, Limits> with) {
      return single(
          name,
          "N",
          String.valueOf(current.applyAsInt(Limits.DEFAULTS)),
          help,
          (config, setting) ->
              config.withLimits(with.apply(config.limits(), FlagValues.count(setting, least))));
    }

    /**
     * A flag setting one of the {@link TransportLimits}, a whole number, 0 for no limit; its
     * default is {@link TransportLimits#DEFAULTS}'.
     */
    static Flag transportLimit(
        String name,
        String help,
        ToIntFunction<TransportLimits> current,
        BiFunction<TransportLimits, Integer, TransportLimits> with) {
      return single(
          name,
          "N",
          String.valueOf(current.applyAsInt(TransportLimits.DEFAULTS)),
          help,
          (config, setting) ->
              config.withTransportLimits(
                  with.apply(config.transportLimits(), FlagValues.count(setting, 0))));
    }

    static Flag list(String name, String syntax, String shownDefault, String help, Apply apply) {
      return new Flag(name, syntax, shownDefault, help, Kind.LIST, apply);
    }

    static Flag commandLine(String name, String syntax, String help) {
      return new Flag(name, syntax, "", help, Kind.COMMAND_LINE, null);
    }
  }

  /** What the proxy connects to, listens on and logs. */
  private static final List<Flag> GENERAL =
      List.of(
          commandLine(
              "config",
              "FILE",
              "YAML file whose keys are the flags below without their dashes; flags given on the command line override it"),
          single(
              "upstream",
              "HOST:PORT[,...]",
              "",
              "the control plane; several addresses are tried in turn when a stream fails; without it, --resources-dir is"
                  + " served",
              (config, setting) -> {
                List<String> targets = List.of(setting.value().split(",", -1));
                for (String target : targets) {
                  if (!target.matches("[^\\s:,]+:\\d{1,5}")
                      && !target.matches("\\[[0-9a-fA-F:.]+\\]:\\d{1,5}")) {
                    throw new ConfigException(
                        setting.where() + ": upstream '" + target + "' is not HOST:PORT");
                  }
                }
                return config.withUpstream(targets.toArray(String[]::new));
              }),
          single(
              "upstream-protocol",
              "sotw|delta",
              "sotw",
              "the ADS variant spoken to the control plane",
              (config, setting) ->
                  switch (setting.value()) {
                    case "sotw" -> config.withUpstreamProtocol(AdsUpstream.Protocol.SOTW);
                    case "delta" -> config.withUpstreamProtocol(AdsUpstream.Protocol.DELTA);
                    default ->
                        throw new ConfigException(
                            setting.where()
                                + ": upstream-protocol '"
                                + setting.value()
                                + "' is neither sotw nor delta");
                  }),
          single(
              "upstream-backoff-initial",
              "D",
              "500ms",
              "first wait before reconnecting, doubling after each failure",
              (config, setting) -> {
                Duration initial = duration(setting);
                Backoff backoff = config.upstreamBackoff();
                return config.withUpstreamBackoff(
                    new Backoff(
                        initial,
                        max(initial, backoff.max()),
                        backoff.multiplier(),
                        backoff.jitter()));
              }),
          single(
              "upstream-backoff-max",
              "D",
              "30s",
              "the longest wait before reconnecting; each wait is spread by +-20%",
              (config, setting) -> {
                Duration max = duration(setting);
                Backoff backoff = config.upstreamBackoff();
                if (max.compareTo(backoff.initial()) < 0) {
                  throw new ConfigException(
                      setting.where()
                          + ": the backoff's maximum is below its initial wait "
                          + backoff.initial().toMillis()
                          + "ms");
                }
                return config.withUpstreamBackoff(
                    new Backoff(backoff.initial(), max, backoff.multiplier(), backoff.jitter()));
              }),
          single(
              "upstream-max-new-sessions-per-second",
              "N",
              "20",
              "upstream streams started a second, at most (new groups and reconnects, queued in turn); 0 for no limit",
              (config, setting) -> config.withUpstreamMaxNewSessionsPerSecond(count(setting, 0))),
          single(
              "resources-dir",
              "DIR",
              "deploy/examples/resources",
              "directory of DiscoveryResponse files (JSON, YAML, text or binary proto), watched for changes",
              (config, setting) -> config.withResourcesDir(Path.of(setting.value()))),
          single(
              "state-dir",
              "DIR",
              "",
              "keep each node group's last good state here, and serve it after a restart until the upstream answers;"
                  + " without it, nothing is kept",
              (config, setting) -> config.withStateDir(Path.of(setting.value()))),
          single(
              "state-include-secrets",
              "true|false",
              "false",
              "true: --state-dir keeps Secrets too, in files only the proxy's user may read",
              (config, setting) ->
                  config.withStateIncludeSecrets(trueOrFalse(setting, "state-include-secrets"))),
          single(
              "xds-port",
              "N",
              "18000",
              "where xDS clients connect",
              (config, setting) ->
                  config.withPorts(port(setting), config.monitoringPort(), config.adminPort())),
          single(
              "monitoring-port",
              "N",
              "19000",
              "HTTP for the kubelet and Prometheus, on every interface: /healthz, /readyz, /metrics",
              (config, setting) ->
                  config.withPorts(config.xdsPort(), port(setting), config.adminPort())),
          single(
              "admin-address",
              "A",
              "127.0.0.1",
              "the address admin HTTP binds",
              (config, setting) -> {
                if (setting.value().isBlank()
                    || !setting.value().matches("[0-9A-Za-z.:_\\[\\]-]+")) {
                  throw new ConfigException(
                      setting.where()
                          + ": admin-address '"
                          + setting.value()
                          + "' is not a host name or IP address");
                }
                return config.withAdminAddress(setting.value());
              }),
          single(
              "admin-port",
              "N",
              "19001",
              "admin HTTP: /config_dump, /clients, /logging",
              (config, setting) ->
                  config.withPorts(config.xdsPort(), config.monitoringPort(), port(setting))),
          single(
              "rest-port",
              "N",
              "",
              "serve REST-JSON xDS on this port, with the xDS port's TLS and checks; without it, REST-JSON is not served",
              (config, setting) -> config.withRestPort(port(setting))),
          single(
              "log-format",
              "text|json",
              "text",
              "text, or JSON lines",
              (config, setting) ->
                  switch (setting.value()) {
                    case "text" -> config.withLogFormat(LogFormat.TEXT);
                    case "json" -> config.withLogFormat(LogFormat.JSON);
                    default ->
                        throw new ConfigException(
                            setting.where()
                                + ": log-format '"
                                + setting.value()
                                + "' is neither text nor json");
                  }),
          list(
              "log-level",
              "[LOGGER=]LEVEL",
              "info",
              "error, warn, info, debug or trace, for all loggers or one; given once per logger",
              (config, setting) -> {
                for (String level : setting.values()) {
                  int equals = level.indexOf('=');
                  if (Logs.problem(
                          equals < 0 ? Logs.ROOT : level.substring(0, equals),
                          level.substring(equals + 1))
                      .isPresent()) {
                    throw new ConfigException(
                        setting.where()
                            + ": log-level '"
                            + level
                            + "' is not LEVEL or LOGGER=LEVEL, LEVEL one of error, warn, info, debug, trace");
                  }
                }
                return config.withLogLevels(setting.values());
              }));

  /** Node groups' lifetimes, the not-found rule, draining and the client connections. */
  private static final List<Flag> LIFETIMES =
      List.of(
          single(
              "not-found-timeout",
              "D",
              "15s",
              "how long a name the upstream was asked for may go unanswered before it is taken not to exist",
              (config, setting) -> config.withNotFoundTimeout(duration(setting))),
          single(
              "rest-poll-timeout",
              "D",
              "30s",
              "how long a REST-JSON long poll waits for a change",
              (config, setting) -> config.withRestPollTimeout(duration(setting))),
          single(
              "group-idle-grace",
              "D",
              "5m",
              "how long a node group without streams keeps its upstream session and cache",
              (config, setting) -> config.withGroupIdleGrace(duration(setting))),
          single(
              "group-audit-interval",
              "D",
              "",
              "audit each node group this often: ask the control plane what it sends a member other than the"
                  + " group's upstream node, and compare; without it, groups are not audited",
              (config, setting) -> config.withGroupAuditInterval(duration(setting))),
          single(
              "drain-time",
              "D",
              "15s",
              "on SIGTERM, how long open streams get to leave",
              (config, setting) -> config.withDrainTime(duration(setting))),
          single(
              "max-connection-age",
              "D",
              "30m",
              "how long a client connection lives before GOAWAY",
              (config, setting) -> config.withMaxConnectionAge(duration(setting))),
          single(
              "xds-hpack-table",
              "true|false",
              "false",
              "true: clients may keep gRPC's default HPACK table of their request headers; false: the xDS"
                  + " port asks them to keep none, about 1 KiB less heap per connection",
              (config, setting) ->
                  config.withXdsHpackTable(trueOrFalse(setting, "xds-hpack-table"))));

  /** HTTP/2 keepalive to the control plane. */
  private static final List<Flag> KEEPALIVE =
      List.of(
          single(
              "upstream-keepalive-time",
              "D",
              "30s",
              "a PING to the control plane after this long without news, at least 10s: it notices one gone silent",
              (config, setting) -> {
                Duration time = duration(setting);
                if (time.compareTo(Duration.ofSeconds(10)) < 0) {
                  throw new ConfigException(
                      setting.where()
                          + ": upstream-keepalive-time must be at least 10s (gRPC pings no more often)");
                }
                return config.withUpstreamKeepalive(
                    new AdsUpstream.Keepalive(time, config.upstreamKeepalive().timeout()));
              }),
          single(
              "upstream-keepalive-timeout",
              "D",
              "10s",
              "the connection is given up when a PING goes unanswered this long",
              (config, setting) ->
                  config.withUpstreamKeepalive(
                      new AdsUpstream.Keepalive(
                          config.upstreamKeepalive().time(), duration(setting)))),
          commandLine("help", "", "prints these flags"),
          commandLine("version", "", "prints the version and the git revision it was built from"));

  static final List<Flag> ALL =
      Stream.of(GENERAL, TenancyFlags.ALL, LIFETIMES, TlsFlags.ALL, LimitFlags.ALL, KEEPALIVE)
          .flatMap(List::stream)
          .toList();

  /**
   * The config-file keys, which are also the flags {@link ProxyConfig#parse} takes besides {@code
   * --config}.
   */
  static final List<String> KEYS = ALL.stream().filter(Flag::isKey).map(Flag::name).toList();

  /** The keys that take several values. */
  static final List<String> LIST_KEYS =
      ALL.stream().filter(flag -> flag.kind() == Kind.LIST).map(Flag::name).toList();

  /** The flag of a config-file key. */
  static Flag ofKey(String key) {
    return ALL.stream()
        .filter(flag -> flag.isKey() && flag.name().equals(key))
        .findFirst()
        .orElseThrow(() -> new IllegalStateException("unhandled key " + key));
  }

  /** Where help text starts, and how wide {@code --help} is. */
  private static final int HELP_COLUMN = 30;

  private static final int WIDTH = 100;

  /** What {@code --help} prints. */
  static String usage() {
    StringBuilder usage = new StringBuilder("usage: java -jar xds-proxy.jar [flags]\n");
    for (Flag flag : ALL) {
      String left = "  --" + flag.name() + (flag.syntax().isEmpty() ? "" : " " + flag.syntax());
      List<String> words = new ArrayList<>(List.of(flag.help().split(" ")));
      if (!flag.shownDefault().isEmpty()) {
        words.add("(default " + flag.shownDefault() + ")");
      }
      usage.append(left);
      int column = left.length();
      if (column + 2 > HELP_COLUMN) {
        usage.append('\n');
        column = 0;
      }
      usage.append(" ".repeat(HELP_COLUMN - column));
      column = HELP_COLUMN;
      boolean lineStart = true;
      for (String word : words) {
        if (!lineStart && column + 1 + word.length() > WIDTH) {
          usage.append('\n').append(" ".repeat(HELP_COLUMN));
          column = HELP_COLUMN;
          lineStart = true;
        }
        if (!lineStart) {
          usage.append(' ');
          column++;
        }
        usage.append(word);
        column += word.length();
        lineStart = false;
      }
      usage.append('\n');
    }
    return usage
        .append("  TLS files are re-read when they change, without a restart.\n")
        .append("  D is a duration: 500ms, 15s, 5m, 1h.")
        .toString();
  }
}
