package io.xdsproxy.app;

import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.app.ProxyConfig.LogFormat;
import io.xdsproxy.app.ProxyConfig.Setting;
import io.xdsproxy.app.logging.Logs;
import io.xdsproxy.core.NodeGroupRule;
import io.xdsproxy.downstream.xds.Limits;
import io.xdsproxy.downstream.xds.NodeIdPattern;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.grpc.Backoff;
import io.xdsproxy.upstream.grpc.TlsFiles;
import io.xdsproxy.upstream.grpc.UpstreamTls;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.ToIntFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

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
  }

  private static Flag single(
      String name, String syntax, String shownDefault, String help, Apply apply) {
    return new Flag(name, syntax, shownDefault, help, Kind.SINGLE, apply);
  }

  /**
   * A flag setting one of the {@link Limits}, a whole number at least {@code least}; its default is
   * {@link Limits#DEFAULTS}'.
   */
  private static Flag limit(
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
        (config, setting) -> config.withLimits(with.apply(config.limits(), count(setting, least))));
  }

  /**
   * A flag setting one of the {@link TransportLimits}, a whole number, 0 for no limit; its default
   * is {@link TransportLimits#DEFAULTS}'.
   */
  private static Flag transportLimit(
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
            config.withTransportLimits(with.apply(config.transportLimits(), count(setting, 0))));
  }

  private static Flag list(
      String name, String syntax, String shownDefault, String help, Apply apply) {
    return new Flag(name, syntax, shownDefault, help, Kind.LIST, apply);
  }

  private static Flag commandLine(String name, String syntax, String help) {
    return new Flag(name, syntax, "", help, Kind.COMMAND_LINE, null);
  }

  static final List<Flag> ALL =
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
              }),
          list(
              "node-group-key",
              "PART",
              "cluster",
              "a part of the node-group key, given once per part, in order: cluster, locality, id:<regex with a capture"
                  + " group>, metadata:<dotted.path> (chosen by the client); san:<regex with a capture group> (read from"
                  + " its certificate's URI and DNS names); <part>=san:<regex> (the certificate's, which the node's claim"
                  + " must equal)",
              (config, setting) -> {
                try {
                  NodeGroupRule.of(setting.values());
                } catch (IllegalArgumentException e) {
                  throw new ConfigException(setting.where() + ": " + e.getMessage());
                }
                return config.withNodeGroupKey(setting.values());
              }),
          single(
              "upstream-node-id",
              "T",
              "",
              "the upstream sees each group's first client's node with this id; {group} and {id} are replaced; without"
                  + " it, the node unchanged",
              (config, setting) -> config.withUpstreamNodeId(setting.value())),
          single(
              "upstream-node",
              "FILE",
              "",
              "the node the upstream sees for each group, YAML or JSON, {group} and {1}, {2}, ... (the key's parts)"
                  + " replaced in its strings; without it, the group's first client's node, which every other member's"
                  + " cluster, locality and metadata must equal",
              (config, setting) ->
                  config.withTenancy(config.tenancy().withUpstreamNode(readable(setting)))),
          single(
              "allow-client-chosen-groups",
              "true|false",
              "false",
              "with tls-client-ca: let node-group key parts no certificate binds stand, so that any client may join"
                  + " any group it names",
              (config, setting) ->
                  config.withTenancy(
                      config
                          .tenancy()
                          .withClientChosenGroups(
                              trueOrFalse(setting, "allow-client-chosen-groups")))),
          single(
              "secrets-to-unverified-clients",
              "true|false",
              "false",
              "serve Secrets (private keys) also to clients whose node group no verified certificate decides: to"
                  + " anyone who names the group",
              (config, setting) ->
                  config.withTenancy(
                      config
                          .tenancy()
                          .withSecretsToUnverifiedClients(
                              trueOrFalse(setting, "secrets-to-unverified-clients")))),
          list(
              "client-status-admin",
              "NAME",
              "",
              "a client certificate URI or DNS name, exactly, whose holder client status (CSDS) on the xDS port tells of"
                  + " every stream; give the flag once per name. Other certificates are told of the streams of their own"
                  + " names; callers without one, of all from 127.0.0.1 or ::1, else refused",
              (config, setting) -> {
                if (setting.values().stream().anyMatch(String::isBlank)) {
                  throw new ConfigException(
                      setting.where()
                          + ": client-status-admin is given an empty name: give a client"
                          + " certificate's URI or DNS name");
                }
                return config.withTenancy(
                    config.tenancy().withClientStatusAdmins(setting.values()));
              }),
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
                  config.withXdsHpackTable(trueOrFalse(setting, "xds-hpack-table"))),
          single(
              "tls-cert",
              "FILE",
              "",
              "TLS on the xDS port: the server's certificate chain (PEM); with --tls-key, both or neither",
              (config, setting) -> {
                ServerTls tls = config.tls();
                return config.withTls(tls.withCert(certificates(setting)));
              }),
          single(
              "tls-key",
              "FILE",
              "",
              "its private key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC)",
              (config, setting) -> {
                ServerTls tls = config.tls();
                return config.withTls(tls.withKey(privateKey(setting)));
              }),
          single(
              "tls-client-ca",
              "FILE",
              "",
              "mTLS: clients must present a certificate of these CAs (PEM)",
              (config, setting) -> {
                ServerTls tls = config.tls();
                return config.withTls(tls.withClientCa(certificates(setting)));
              }),
          single(
              "tls-node-id-pattern",
              "P",
              "",
              "with mTLS, a regex the node id must match, where {san} is one of the client certificate's URI or DNS names"
                  + " (a SPIFFE id)",
              (config, setting) -> {
                try {
                  new NodeIdPattern(setting.value());
                } catch (IllegalArgumentException e) {
                  throw new ConfigException(setting.where() + ": " + e.getMessage());
                }
                ServerTls tls = config.tls();
                return config.withTls(tls.withNodeIdPattern(setting.value()));
              }),
          single(
              "upstream-tls",
              "true|false",
              "false",
              "true: TLS to the control plane, trusting the JVM's trust store",
              (config, setting) ->
                  trueOrFalse(setting, "upstream-tls")
                      ? config.withUpstreamTls(config.upstreamTls().withTls())
                      : config),
          single(
              "upstream-ca",
              "FILE",
              "",
              "TLS to the control plane, trusting these CAs (PEM)",
              (config, setting) -> {
                UpstreamTls tls = config.upstreamTls();
                return config.withUpstreamTls(tls.withCa(certificates(setting)));
              }),
          single(
              "upstream-cert",
              "FILE",
              "",
              "mTLS to the control plane: the proxy's certificate chain (PEM); with --upstream-key, both or neither",
              (config, setting) -> {
                UpstreamTls tls = config.upstreamTls();
                return config.withUpstreamTls(tls.withTls().withCert(certificates(setting)));
              }),
          single(
              "upstream-key",
              "FILE",
              "",
              "its private key (PEM, as --tls-key)",
              (config, setting) -> {
                UpstreamTls tls = config.upstreamTls();
                return config.withUpstreamTls(tls.withKey(privateKey(setting)));
              }),
          single(
              "upstream-authority",
              "NAME",
              "",
              "the name the control plane's certificate must carry, sent as :authority; without it, the host of"
                  + " --upstream",
              (config, setting) -> {
                if (setting.value().isBlank() || setting.value().contains("/")) {
                  throw new ConfigException(
                      setting.where()
                          + ": upstream-authority '"
                          + setting.value()
                          + "' is not a host name");
                }
                UpstreamTls tls = config.upstreamTls();
                return config.withUpstreamTls(tls.withAuthority(setting.value()));
              }),
          limit(
              "max-request-bytes",
              "the largest request a client may send",
              1,
              Limits::maxRequestBytes,
              Limits::withMaxRequestBytes),
          limit(
              "max-names-per-request",
              "the most resource names in one request, and subscribed to of one type on one stream",
              1,
              Limits::maxNamesPerRequest,
              Limits::withMaxNamesPerRequest),
          limit(
              "max-name-length",
              "the longest resource name, in characters",
              1,
              Limits::maxNameLength,
              Limits::withMaxNameLength),
          limit(
              "max-streams-per-connection",
              "streams one client connection may have open",
              1,
              Limits::maxStreamsPerConnection,
              Limits::withMaxStreamsPerConnection),
          limit(
              "max-node-groups",
              "node groups the proxy may have open, idle ones too",
              1,
              Limits::maxNodeGroups,
              Limits::withMaxNodeGroups),
          limit(
              "max-node-groups-per-client",
              "node groups the clients of one certificate identity (or one address, without one) may have opened,"
                  + " idle ones too",
              1,
              Limits::maxNodeGroupsPerClient,
              Limits::withMaxNodeGroupsPerClient),
          limit(
              "max-upstream-names-bytes-per-group",
              "the bytes the resource names of one type that a node group asks its upstream for may take in one"
                  + " request; a client whose subscription would pass it is refused",
              1,
              Limits::maxUpstreamNameBytesPerGroup,
              Limits::withMaxUpstreamNameBytesPerGroup),
          limit(
              "max-streams-per-group",
              "streams one node group may have open",
              1,
              Limits::maxStreamsPerGroup,
              Limits::withMaxStreamsPerGroup),
          limit(
              "max-streams-per-node",
              "streams one node id may have open, 0 for no limit",
              0,
              Limits::maxStreamsPerNode,
              Limits::withMaxStreamsPerNode),
          limit(
              "max-requests-per-second",
              "the rate a stream's requests are read at, at most; 0 for no limit",
              0,
              Limits::requestsPerSecond,
              Limits::withRequestsPerSecond),
          transportLimit(
              "max-connections",
              "connections the xDS port holds at once; one more is closed as it is accepted; 0 for no"
                  + " limit",
              TransportLimits::maxConnections,
              TransportLimits::withMaxConnections),
          transportLimit(
              "max-connections-per-address",
              "connections one client address may hold on the xDS port; one more is closed as it is"
                  + " accepted; 0 for no limit",
              TransportLimits::maxConnectionsPerAddress,
              TransportLimits::withMaxConnectionsPerAddress),
          transportLimit(
              "max-stream-resets-per-connection",
              "streams one client connection may reset in "
                  + TransportLimits.RESET_WINDOW.toSeconds()
                  + "s (RST_STREAM); past it, GOAWAY ENHANCE_YOUR_CALM and the connection is"
                  + " closed; 0 for no limit",
              TransportLimits::maxStreamResetsPerConnection,
              TransportLimits::withMaxStreamResetsPerConnection),
          limit(
              "max-node-bytes",
              "the largest node a client may name, serialized, in bytes",
              1,
              Limits::maxNodeBytes,
              Limits::withMaxNodeBytes),
          limit(
              "max-node-metadata-bytes",
              "the largest node.metadata, serialized, in bytes",
              1,
              Limits::maxNodeMetadataBytes,
              Limits::withMaxNodeMetadataBytes),
          limit(
              "max-node-metadata-depth",
              "the deepest nesting of structs and lists in node.metadata",
              1,
              Limits::maxNodeMetadataDepth,
              Limits::withMaxNodeMetadataDepth),
          limit(
              "max-node-string-length",
              "the longest node id, cluster, user agent or locality, in characters",
              1,
              Limits::maxNodeStringLength,
              Limits::withMaxNodeStringLength),
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

  /** The PEM certificate file a setting names, checked to hold certificates. */
  private static Path certificates(Setting setting) throws ConfigException {
    Path file = Path.of(setting.value());
    try {
      TlsFiles.certificates(file);
    } catch (IOException e) {
      throw new ConfigException(setting.where() + ": " + e.getMessage());
    }
    return file;
  }

  /**
   * The PEM private key file a setting names, checked to hold a key the proxy reads (see
   * TlsFiles#privateKey).
   */
  /** A file that exists and can be read. */
  private static Path readable(Setting setting) throws ConfigException {
    Path file = Path.of(setting.value());
    if (!java.nio.file.Files.isReadable(file)) {
      throw new ConfigException(setting.where() + ": cannot read " + file);
    }
    return file;
  }

  private static Path privateKey(Setting setting) throws ConfigException {
    Path file = Path.of(setting.value());
    try {
      TlsFiles.privateKey(file);
    } catch (IOException e) {
      throw new ConfigException(setting.where() + ": " + e.getMessage());
    }
    return file;
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  /** The value of {@code key}'s setting, which must be {@code true} or {@code false}. */
  private static boolean trueOrFalse(Setting setting, String key) throws ConfigException {
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

  private static int port(Setting setting) throws ConfigException {
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
  private static int count(Setting setting, int least) throws ConfigException {
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

  private static Duration duration(Setting setting) throws ConfigException {
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

  private static final Pattern DURATION = Pattern.compile("(\\d{1,9})(ms|s|m|h)");
}
