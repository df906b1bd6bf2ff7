package io.xdsproxy.app;

import io.xdsproxy.downstream.xds.Limits;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.grpc.Backoff;
import io.xdsproxy.upstream.grpc.TlsFiles;
import io.xdsproxy.upstream.grpc.UpstreamTls;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * How the proxy is configured: command-line flags, and a YAML file ({@code --config}) whose keys
 * are the flags without their dashes. Flags override the file. Each flag, how it is parsed and what
 * it sets here, is one entry of {@link Flags#ALL}.
 *
 * @param upstream the control plane's addresses, {@code host:port} each, tried in turn; empty to
 *     serve {@code resourcesDir}
 * @param upstreamProtocol the ADS variant spoken to the control plane
 * @param upstreamBackoff how long to wait before reconnecting to the control plane
 * @param resourcesDir the directory of DiscoveryResponse files served when there is no upstream
 * @param xdsPort where clients connect (0: any free port)
 * @param monitoringPort where health, readiness and metrics are served to the kubelet and
 *     Prometheus, on every interface (0: any free port)
 * @param adminAddress the address the admin HTTP server (config dump, clients, log levels) binds:
 *     the loopback by default, as Envoy's admin and istiod's ControlZ
 * @param adminPort where the admin HTTP server listens (0: any free port)
 * @param restPort where REST-JSON xDS is served, with the xDS port's TLS and checks; empty: not at
 *     all
 * @param tenancy how clients are put into node groups, what the upstream sees of a group, and who
 *     is entitled to what
 * @param groupIdleGrace how long a node group with no streams keeps its upstream session and store
 * @param groupAuditInterval how long after its last audit a node group is audited again (a member
 *     node other than the upstream node asked about upstream and compared); empty: never
 * @param notFoundTimeout how long a name the upstream was asked for may go unanswered before it is
 *     taken not to exist ("Knowing When a Requested Resource Does Not Exist")
 * @param restPollTimeout how long a REST-JSON long poll waits for a change before 304 Not Modified
 * @param drainTime on SIGTERM, how long open streams get to leave before the proxy closes them
 * @param maxConnectionAge how long a client connection lives before GOAWAY moves it, maybe to
 *     another replica
 * @param xdsHpackTable whether the xDS port lets clients keep gRPC's default HPACK table of their
 *     request headers (false: it asks for none, {@link NoHpackTable})
 * @param tls TLS, maybe mutual, on the xDS port
 * @param upstreamTls how the control plane is reached: plaintext or TLS
 * @param limits what one client may ask of the proxy
 * @param transportLimits what one peer may cost the xDS port's transport: connections in all and
 *     per address, stream resets per connection
 * @param upstreamKeepalive HTTP/2 keepalive to the control plane: what notices one gone silent
 * @param stateDir where each node group's last good state is kept across restarts, served until the
 *     upstream answers ("fail-static"); empty: nowhere
 * @param stateIncludeSecrets whether Secrets are kept in {@code stateDir} too
 * @param logFormat how log lines are written
 * @param logLevels {@code level} or {@code logger=level} each, applied in order at start
 */
public record ProxyConfig(
    List<String> upstream,
    AdsUpstream.Protocol upstreamProtocol,
    Backoff upstreamBackoff,
    Path resourcesDir,
    int xdsPort,
    int monitoringPort,
    String adminAddress,
    int adminPort,
    Optional<Integer> restPort,
    Tenancy tenancy,
    Duration groupIdleGrace,
    Optional<Duration> groupAuditInterval,
    Duration notFoundTimeout,
    Duration restPollTimeout,
    Duration drainTime,
    Duration maxConnectionAge,
    boolean xdsHpackTable,
    ServerTls tls,
    UpstreamTls upstreamTls,
    Limits limits,
    TransportLimits transportLimits,
    AdsUpstream.Keepalive upstreamKeepalive,
    Optional<Path> stateDir,
    boolean stateIncludeSecrets,
    int upstreamMaxNewSessionsPerSecond,
    LogFormat logFormat,
    List<String> logLevels) {

  /** How log lines are written: text for a terminal, JSON lines for a log pipeline. */
  public enum LogFormat {
    TEXT,
    JSON
  }

  public static final ProxyConfig DEFAULTS =
      new ProxyConfig(
          List.of(),
          AdsUpstream.Protocol.SOTW,
          Backoff.DEFAULT,
          Path.of("deploy/examples/resources"),
          18000,
          19000,
          "127.0.0.1",
          19001,
          Optional.empty(),
          Tenancy.DEFAULTS,
          Duration.ofMinutes(5),
          Optional.empty(),
          Duration.ofSeconds(15),
          Duration.ofSeconds(30),
          Duration.ofSeconds(15),
          Duration.ofMinutes(30),
          false,
          ServerTls.OFF,
          UpstreamTls.PLAINTEXT,
          Limits.DEFAULTS,
          TransportLimits.DEFAULTS,
          AdsUpstream.Keepalive.DEFAULT,
          Optional.empty(),
          false,
          20,
          LogFormat.TEXT,
          List.of());

  /** What {@code --help} prints, from {@link Flags#ALL}. */
  static final String USAGE = Flags.usage();

  /**
   * The config file's keys: every flag but {@code --config}, {@code --help} and {@code --version}.
   */
  static final List<String> KEYS = Flags.KEYS;

  /** Keys that take several values: a YAML list, or the flag given more than once. */
  private static final List<String> LIST_KEYS = Flags.LIST_KEYS;

  public ProxyConfig withUpstream(String... targets) {
    return edit(b -> b.upstream = List.of(targets));
  }

  public ProxyConfig withUpstreamBackoff(Backoff backoff) {
    return edit(b -> b.upstreamBackoff = backoff);
  }

  public ProxyConfig withUpstreamProtocol(AdsUpstream.Protocol protocol) {
    return edit(b -> b.upstreamProtocol = protocol);
  }

  public ProxyConfig withResourcesDir(Path dir) {
    return edit(b -> b.resourcesDir = dir);
  }

  /**
   * The xDS, monitoring and admin ports; REST-JSON stays as it is (off unless {@link
   * #withRestPort}).
   */
  public ProxyConfig withPorts(int xds, int monitoring, int admin) {
    return edit(
        b -> {
          b.xdsPort = xds;
          b.monitoringPort = monitoring;
          b.adminPort = admin;
        });
  }

  public ProxyConfig withAdminAddress(String address) {
    return edit(b -> b.adminAddress = address);
  }

  /** REST-JSON xDS served on {@code port} (0: any free port). */
  public ProxyConfig withRestPort(int port) {
    return edit(b -> b.restPort = Optional.of(port));
  }

  public ProxyConfig withLogFormat(LogFormat format) {
    return edit(b -> b.logFormat = format);
  }

  public ProxyConfig withLogLevels(List<String> levels) {
    return edit(b -> b.logLevels = levels);
  }

  public ProxyConfig withNodeGroupKey(List<String> parts) {
    return withTenancy(tenancy.withNodeGroupKey(parts));
  }

  public ProxyConfig withUpstreamNodeId(String template) {
    return withTenancy(tenancy.withUpstreamNodeId(template));
  }

  public ProxyConfig withTenancy(Tenancy tenancy) {
    return edit(b -> b.tenancy = tenancy);
  }

  public ProxyConfig withGroupIdleGrace(Duration grace) {
    return edit(b -> b.groupIdleGrace = grace);
  }

  public ProxyConfig withGroupAuditInterval(Duration interval) {
    return edit(b -> b.groupAuditInterval = Optional.of(interval));
  }

  public ProxyConfig withNotFoundTimeout(Duration timeout) {
    return edit(b -> b.notFoundTimeout = timeout);
  }

  public ProxyConfig withDrainTime(Duration time) {
    return edit(b -> b.drainTime = time);
  }

  public ProxyConfig withMaxConnectionAge(Duration age) {
    return edit(b -> b.maxConnectionAge = age);
  }

  public ProxyConfig withXdsHpackTable(boolean keep) {
    return edit(b -> b.xdsHpackTable = keep);
  }

  public ProxyConfig withRestPollTimeout(Duration timeout) {
    return edit(b -> b.restPollTimeout = timeout);
  }

  public ProxyConfig withTls(ServerTls tls) {
    return edit(b -> b.tls = tls);
  }

  public ProxyConfig withUpstreamTls(UpstreamTls tls) {
    return edit(b -> b.upstreamTls = tls);
  }

  public ProxyConfig withLimits(Limits limits) {
    return edit(b -> b.limits = limits);
  }

  public ProxyConfig withTransportLimits(TransportLimits limits) {
    return edit(b -> b.transportLimits = limits);
  }

  public ProxyConfig withUpstreamKeepalive(AdsUpstream.Keepalive keepalive) {
    return edit(b -> b.upstreamKeepalive = keepalive);
  }

  public ProxyConfig withStateDir(Path dir) {
    return edit(b -> b.stateDir = Optional.of(dir));
  }

  public ProxyConfig withStateIncludeSecrets(boolean include) {
    return edit(b -> b.stateIncludeSecrets = include);
  }

  public ProxyConfig withUpstreamMaxNewSessionsPerSecond(int rate) {
    return edit(b -> b.upstreamMaxNewSessionsPerSecond = rate);
  }

  /** A copy with the changes {@code change} makes. */
  private ProxyConfig edit(java.util.function.Consumer<Builder> change) {
    Builder builder = new Builder(this);
    change.accept(builder);
    return builder.build();
  }

  /** The fields of a config, to change some and build anew. */
  private static final class Builder {
    List<String> upstream;
    AdsUpstream.Protocol upstreamProtocol;
    Backoff upstreamBackoff;
    Path resourcesDir;
    int xdsPort;
    int monitoringPort;
    String adminAddress;
    int adminPort;
    Optional<Integer> restPort;
    Tenancy tenancy;
    Duration groupIdleGrace;
    Optional<Duration> groupAuditInterval;
    Duration notFoundTimeout;
    Duration restPollTimeout;
    Duration drainTime;
    Duration maxConnectionAge;
    boolean xdsHpackTable;
    ServerTls tls;
    UpstreamTls upstreamTls;
    Limits limits;
    TransportLimits transportLimits;
    AdsUpstream.Keepalive upstreamKeepalive;
    Optional<Path> stateDir;
    boolean stateIncludeSecrets;
    int upstreamMaxNewSessionsPerSecond;
    LogFormat logFormat;
    List<String> logLevels;

    Builder(ProxyConfig from) {
      upstream = from.upstream;
      upstreamProtocol = from.upstreamProtocol;
      upstreamBackoff = from.upstreamBackoff;
      resourcesDir = from.resourcesDir;
      xdsPort = from.xdsPort;
      monitoringPort = from.monitoringPort;
      adminAddress = from.adminAddress;
      adminPort = from.adminPort;
      restPort = from.restPort;
      tenancy = from.tenancy;
      groupIdleGrace = from.groupIdleGrace;
      groupAuditInterval = from.groupAuditInterval;
      notFoundTimeout = from.notFoundTimeout;
      restPollTimeout = from.restPollTimeout;
      drainTime = from.drainTime;
      maxConnectionAge = from.maxConnectionAge;
      xdsHpackTable = from.xdsHpackTable;
      tls = from.tls;
      upstreamTls = from.upstreamTls;
      limits = from.limits;
      transportLimits = from.transportLimits;
      upstreamKeepalive = from.upstreamKeepalive;
      stateDir = from.stateDir;
      stateIncludeSecrets = from.stateIncludeSecrets;
      upstreamMaxNewSessionsPerSecond = from.upstreamMaxNewSessionsPerSecond;
      logFormat = from.logFormat;
      logLevels = from.logLevels;
    }

    ProxyConfig build() {
      return new ProxyConfig(
          List.copyOf(upstream),
          upstreamProtocol,
          upstreamBackoff,
          resourcesDir,
          xdsPort,
          monitoringPort,
          adminAddress,
          adminPort,
          restPort,
          tenancy,
          groupIdleGrace,
          groupAuditInterval,
          notFoundTimeout,
          restPollTimeout,
          drainTime,
          maxConnectionAge,
          xdsHpackTable,
          tls,
          upstreamTls,
          limits,
          transportLimits,
          upstreamKeepalive,
          stateDir,
          stateIncludeSecrets,
          upstreamMaxNewSessionsPerSecond,
          logFormat,
          List.copyOf(logLevels));
    }
  }

  /**
   * The configuration given by {@code args}.
   *
   * @throws ConfigException naming the flag, key or file that is wrong
   */
  public static ProxyConfig parse(String[] args) throws ConfigException {
    Map<String, List<String>> flags = new LinkedHashMap<>();
    Optional<Path> file = Optional.empty();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      String name;
      String value;
      int eq = arg.indexOf('=');
      if (!arg.startsWith("--")) {
        throw new ConfigException("unexpected argument '" + arg + "'");
      } else if (eq > 0) {
        name = arg.substring(2, eq);
        value = arg.substring(eq + 1);
      } else if (i + 1 < args.length) {
        name = arg.substring(2);
        value = args[++i];
      } else {
        throw new ConfigException("flag " + arg + " needs a value");
      }
      if (name.equals("config")) {
        file = Optional.of(Path.of(value));
      } else if (KEYS.contains(name)) {
        List<String> values = flags.computeIfAbsent(name, n -> new ArrayList<>());
        if (!LIST_KEYS.contains(name)) {
          values.clear();
        }
        values.add(value);
      } else {
        throw new ConfigException("unknown flag --" + name);
      }
    }
    Map<String, Setting> settings = new LinkedHashMap<>();
    if (file.isPresent()) {
      settings.putAll(ConfigFile.read(file.get(), KEYS, LIST_KEYS));
    }
    flags.forEach((name, values) -> settings.put(name, new Setting(values, "flag --" + name)));
    ProxyConfig config = DEFAULTS;
    // In the table's order, not the order given: a key read against another (the backoff's maximum
    // against its initial wait) then means the same wherever either is written.
    for (String key : KEYS) {
      if (settings.containsKey(key)) {
        config = config.with(key, settings.get(key));
      }
    }
    checkTls(settings);
    checkPorts(config, settings);
    config.tenancy().check(config.tls());
    return config;
  }

  /** Two listeners cannot share a port (0, any free port, aside). */
  private static void checkPorts(ProxyConfig config, Map<String, Setting> settings)
      throws ConfigException {
    Map<Integer, String> taken = new LinkedHashMap<>();
    Map<String, Integer> ports = new LinkedHashMap<>();
    ports.put("xds-port", config.xdsPort());
    ports.put("monitoring-port", config.monitoringPort());
    ports.put("admin-port", config.adminPort());
    config.restPort().ifPresent(port -> ports.put("rest-port", port));
    for (Map.Entry<String, Integer> entry : ports.entrySet()) {
      String other =
          entry.getValue() == 0 ? null : taken.putIfAbsent(entry.getValue(), entry.getKey());
      if (other != null) {
        Setting given =
            settings.containsKey(entry.getKey())
                ? settings.get(entry.getKey())
                : settings.get(other);
        String where = given != null ? given.where() + ": " : "";
        throw new ConfigException(
            where
                + entry.getKey()
                + " and "
                + other
                + " are both "
                + entry.getValue()
                + " (each listener needs its own port)");
      }
    }
  }

  /** The TLS keys that only make sense together, and certificates that must match their keys. */
  private static void checkTls(Map<String, Setting> settings) throws ConfigException {
    requireBoth(settings, "tls-cert", "tls-key");
    requireBoth(settings, "upstream-cert", "upstream-key");
    requires(settings, "tls-client-ca", "tls-cert", "mTLS needs TLS");
    requires(
        settings,
        "tls-node-id-pattern",
        "tls-client-ca",
        "the node id is checked against the client certificate");
    Setting upstreamTls = settings.get("upstream-tls");
    if (upstreamTls != null && upstreamTls.value().equals("false")) {
      for (String key : List.of("upstream-ca", "upstream-cert")) {
        if (settings.containsKey(key)) {
          throw new ConfigException(
              upstreamTls.where()
                  + ": upstream-tls is false, but "
                  + key
                  + " is given at "
                  + settings.get(key).where());
        }
      }
    }
    for (String side : List.of("tls", "upstream")) {
      Setting cert = settings.get(side + "-cert");
      if (cert != null) {
        try {
          TlsFiles.checkPair(Path.of(cert.value()), Path.of(settings.get(side + "-key").value()));
        } catch (IOException e) {
          throw new ConfigException(cert.where() + ": " + e.getMessage());
        }
      }
    }
  }

  private static void requireBoth(Map<String, Setting> settings, String a, String b)
      throws ConfigException {
    requires(settings, a, b, "the one is no use without the other");
    requires(settings, b, a, "the one is no use without the other");
  }

  private static void requires(Map<String, Setting> settings, String key, String needed, String why)
      throws ConfigException {
    if (settings.containsKey(key) && !settings.containsKey(needed)) {
      throw new ConfigException(
          settings.get(key).where()
              + ": "
              + key
              + " is given without "
              + needed
              + " ("
              + why
              + ")");
    }
  }

  private ProxyConfig with(String key, Setting setting) throws ConfigException {
    return Flags.ofKey(key).apply().apply(this, setting);
  }

  /** The values of a key and where they were given, for error messages. */
  record Setting(List<String> values, String where) {
    /** The one value of a key that takes one (the last given wins on the command line). */
    String value() {
      return values.get(values.size() - 1);
    }
  }

  /** A configuration error; its message is the one line the proxy prints before exiting. */
  public static final class ConfigException extends Exception {
    public ConfigException(String message) {
      super(message);
    }
  }
}
