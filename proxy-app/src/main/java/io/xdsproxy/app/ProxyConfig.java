package io.xdsproxy.app;

import io.xdsproxy.core.NodeGroupRule;
import io.xdsproxy.downstream.xds.Limits;
import io.xdsproxy.downstream.xds.NodeIdPattern;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.grpc.Backoff;
import io.xdsproxy.upstream.grpc.TlsFiles;
import io.xdsproxy.upstream.grpc.UpstreamTls;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

/**
 * How the proxy is configured: command-line flags, and a YAML file ({@code --config}) whose keys
 * are the flags without their dashes. Flags override the file.
 *
 * @param upstream the control plane's addresses, {@code host:port} each, tried in turn; empty to
 *     serve {@code resourcesDir}
 * @param upstreamProtocol the ADS variant spoken to the control plane
 * @param upstreamBackoff how long to wait before reconnecting to the control plane
 * @param resourcesDir the directory of DiscoveryResponse files served when there is no upstream
 * @param xdsPort where clients connect (0: any free port)
 * @param monitoringPort where health, readiness and metrics are served to the kubelet and Prometheus,
 *     on every interface (0: any free port)
 * @param adminAddress the address the admin HTTP server (config dump, clients, log levels) binds: the
 *     loopback by default, as Envoy's admin and istiod's ControlZ
 * @param adminPort where the admin HTTP server listens (0: any free port)
 * @param restPort where REST-JSON xDS is served, with the xDS port's TLS and checks; empty: not at all
 * @param nodeGroupKey the parts of a client's node that make its node-group key ({@link NodeGroupRule})
 * @param upstreamNodeId empty: the upstream sees each group's first client's node as it is; else that
 *     node with this id, in which {@code {group}} and {@code {id}} are replaced
 * @param groupIdleGrace how long a node group with no streams keeps its upstream session and store
 * @param notFoundTimeout how long a name the upstream was asked for may go unanswered before it is
 *     taken not to exist ("Knowing When a Requested Resource Does Not Exist")
 * @param restPollTimeout how long a REST-JSON long poll waits for a change before 304 Not Modified
 * @param drainTime on SIGTERM, how long open streams get to leave before the proxy closes them
 * @param maxConnectionAge how long a client connection lives before GOAWAY moves it, maybe to
 *     another replica
 * @param tls TLS, maybe mutual, on the xDS port
 * @param upstreamTls how the control plane is reached: plaintext or TLS
 * @param limits what one client may ask of the proxy
 * @param upstreamKeepalive HTTP/2 keepalive to the control plane: what notices one gone silent
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
    List<String> nodeGroupKey,
    Optional<String> upstreamNodeId,
    Duration groupIdleGrace,
    Duration notFoundTimeout,
    Duration restPollTimeout,
    Duration drainTime,
    Duration maxConnectionAge,
    ServerTls tls,
    UpstreamTls upstreamTls,
    Limits limits,
    AdsUpstream.Keepalive upstreamKeepalive,
    LogFormat logFormat,
    List<String> logLevels) {

  /** How log lines are written: text for a terminal, JSON lines for a log pipeline. */
  public enum LogFormat { TEXT, JSON }

  public static final ProxyConfig DEFAULTS = new ProxyConfig(
      List.of(),
      AdsUpstream.Protocol.SOTW,
      Backoff.DEFAULT,
      Path.of("deploy/examples/resources"),
      18000,
      19000,
      "127.0.0.1",
      19001,
      Optional.empty(),
      List.of("cluster"),
      Optional.empty(),
      Duration.ofMinutes(5),
      Duration.ofSeconds(15),
      Duration.ofSeconds(30),
      Duration.ofSeconds(15),
      Duration.ofMinutes(30),
      ServerTls.OFF,
      UpstreamTls.PLAINTEXT,
      Limits.DEFAULTS,
      AdsUpstream.Keepalive.DEFAULT,
      LogFormat.TEXT,
      List.of());

  static final String USAGE = """
      usage: java -jar xds-proxy.jar [flags]
        --config FILE               YAML file whose keys are the flags below without their dashes;
                                    flags given on the command line override it
        --upstream HOST:PORT[,...]  the control plane; several addresses are tried in turn when a
                                    stream fails; without it, --resources-dir is served
        --upstream-protocol P       sotw or delta: the ADS variant spoken to it (default sotw)
        --upstream-backoff-initial D   first wait before reconnecting (default 500ms), doubling
        --upstream-backoff-max D    up to this (default 30s), each wait spread by +-20%
        --resources-dir DIR         directory of DiscoveryResponse files (JSON, YAML, text or binary
                                    proto), watched for changes (default deploy/examples/resources)
        --xds-port N                where xDS clients connect (default 18000)
        --monitoring-port N         HTTP for the kubelet and Prometheus, on every interface:
                                    /healthz, /readyz, /metrics (default 19000)
        --admin-address A           the address admin HTTP binds (default 127.0.0.1)
        --admin-port N              admin HTTP: /config_dump, /clients, /logging (default 19001)
        --rest-port N               serve REST-JSON xDS on this port, with the xDS port's TLS and
                                    checks (default: not served)
        --log-format F              text or json (JSON lines) (default text)
        --log-level [LOGGER=]LEVEL  error, warn, info, debug or trace, for all loggers or one;
                                    given once per logger (default info)
        --node-group-key PART       a part of the node-group key, given once per part, in order:
                                    cluster, locality, id:<regex with a capture group>,
                                    metadata:<dotted.path> (default cluster)
        --upstream-node-id T        the upstream sees each group's first client's node with this
                                    id; {group} and {id} are replaced (default: the node unchanged)
        --not-found-timeout D       how long a name the upstream was asked for may go unanswered
                                    before it is taken not to exist (default 15s)
        --rest-poll-timeout D       how long a REST-JSON long poll waits for a change (default 30s)
        --group-idle-grace D        how long a node group without streams keeps its upstream
                                    session and cache (default 5m)
        --drain-time D              on SIGTERM, how long open streams get to leave (default 15s)
        --max-connection-age D      how long a client connection lives before GOAWAY (default 30m)
        --tls-cert FILE             TLS on the xDS port: the server's certificate chain (PEM), with
        --tls-key FILE              its private key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC); both or
                                    neither
        --tls-client-ca FILE        mTLS: clients must present a certificate of these CAs (PEM)
        --tls-node-id-pattern P     with mTLS, a regex the node id must match, where {san} is one of
                                    the client certificate's URI or DNS names (a SPIFFE id)
        --upstream-tls B            true: TLS to the control plane, trusting the JVM's trust store
        --upstream-ca FILE          TLS to the control plane, trusting these CAs (PEM)
        --upstream-cert FILE        mTLS to the control plane: the proxy's certificate chain (PEM),
        --upstream-key FILE         with its private key (PEM, as --tls-key); both or neither
        --upstream-authority NAME   the name the control plane's certificate must carry, sent as
                                    :authority (default: the host of --upstream)
        --upstream-keepalive-time D   a PING to the control plane after this long without news
                                    (default 30s, at least 10s): it notices one gone silent
        --upstream-keepalive-timeout D   the connection is given up when a PING goes unanswered
                                    this long (default 10s)
        TLS files are re-read when they change, without a restart.
        --max-request-bytes N       the largest request a client may send (default 4194304)
        --max-names-per-request N   the most resource names in one request, and subscribed to of
                                    one type on one stream (default 50000)
        --max-name-length N         the longest resource name, in characters (default 4096)
        --max-streams-per-connection N   streams one client connection may have open (default 100)
        --max-streams-per-group N   streams one node group may have open (default 100000)
        --max-streams-per-node N    streams one node id may have open, 0 for no limit (default 0)
        --max-requests-per-second N   the rate a stream's requests are read at, at most; 0 for no
                                    limit (default 100)
        --version                   prints the version and the git revision it was built from
      D is a duration: 500ms, 15s, 5m, 1h.""";

  static final List<String> KEYS = List.of("upstream", "upstream-protocol", "upstream-backoff-initial",
      "upstream-backoff-max", "resources-dir", "xds-port",
      "monitoring-port", "admin-address", "admin-port", "rest-port", "log-format", "log-level", "node-group-key", "upstream-node-id", "not-found-timeout", "rest-poll-timeout", "group-idle-grace",
      "drain-time", "max-connection-age", "tls-cert", "tls-key", "tls-client-ca", "tls-node-id-pattern",
      "upstream-tls", "upstream-ca", "upstream-cert", "upstream-key", "upstream-authority", "max-request-bytes",
      "max-names-per-request", "max-name-length", "max-streams-per-connection", "max-streams-per-group",
      "max-streams-per-node", "max-requests-per-second", "upstream-keepalive-time", "upstream-keepalive-timeout");
  /** Keys that take several values: a YAML list, or the flag given more than once. */
  private static final List<String> LIST_KEYS = List.of("node-group-key", "log-level");

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

  /** The xDS, monitoring and admin ports; REST-JSON stays as it is (off unless {@link #withRestPort}). */
  public ProxyConfig withPorts(int xds, int monitoring, int admin) {
    return edit(b -> {
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
    return edit(b -> b.nodeGroupKey = parts);
  }

  public ProxyConfig withUpstreamNodeId(String template) {
    return edit(b -> b.upstreamNodeId = Optional.of(template));
  }

  public ProxyConfig withGroupIdleGrace(Duration grace) {
    return edit(b -> b.groupIdleGrace = grace);
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

  public ProxyConfig withUpstreamKeepalive(AdsUpstream.Keepalive keepalive) {
    return edit(b -> b.upstreamKeepalive = keepalive);
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
    List<String> nodeGroupKey;
    Optional<String> upstreamNodeId;
    Duration groupIdleGrace;
    Duration notFoundTimeout;
    Duration restPollTimeout;
    Duration drainTime;
    Duration maxConnectionAge;
    ServerTls tls;
    UpstreamTls upstreamTls;
    Limits limits;
    AdsUpstream.Keepalive upstreamKeepalive;
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
      nodeGroupKey = from.nodeGroupKey;
      upstreamNodeId = from.upstreamNodeId;
      groupIdleGrace = from.groupIdleGrace;
      notFoundTimeout = from.notFoundTimeout;
      restPollTimeout = from.restPollTimeout;
      drainTime = from.drainTime;
      maxConnectionAge = from.maxConnectionAge;
      tls = from.tls;
      upstreamTls = from.upstreamTls;
      limits = from.limits;
      upstreamKeepalive = from.upstreamKeepalive;
      logFormat = from.logFormat;
      logLevels = from.logLevels;
    }

    ProxyConfig build() {
      return new ProxyConfig(List.copyOf(upstream), upstreamProtocol, upstreamBackoff, resourcesDir, xdsPort,
          monitoringPort, adminAddress, adminPort, restPort, List.copyOf(nodeGroupKey), upstreamNodeId, groupIdleGrace,
          notFoundTimeout, restPollTimeout, drainTime, maxConnectionAge, tls, upstreamTls, limits, upstreamKeepalive,
          logFormat, List.copyOf(logLevels));
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
      settings.putAll(readFile(file.get()));
    }
    flags.forEach((name, values) -> settings.put(name, new Setting(values, "flag --" + name)));
    ProxyConfig config = DEFAULTS;
    for (Map.Entry<String, Setting> entry : settings.entrySet()) {
      config = config.with(entry.getKey(), entry.getValue());
    }
    checkTls(settings);
    checkPorts(config, settings);
    return config;
  }

  /** Two listeners cannot share a port (0, any free port, aside). */
  private static void checkPorts(ProxyConfig config, Map<String, Setting> settings) throws ConfigException {
    Map<Integer, String> taken = new LinkedHashMap<>();
    Map<String, Integer> ports = new LinkedHashMap<>();
    ports.put("xds-port", config.xdsPort());
    ports.put("monitoring-port", config.monitoringPort());
    ports.put("admin-port", config.adminPort());
    config.restPort().ifPresent(port -> ports.put("rest-port", port));
    for (Map.Entry<String, Integer> entry : ports.entrySet()) {
      String other = entry.getValue() == 0 ? null : taken.putIfAbsent(entry.getValue(), entry.getKey());
      if (other != null) {
        Setting given = settings.containsKey(entry.getKey()) ? settings.get(entry.getKey()) : settings.get(other);
        String where = given != null ? given.where() + ": " : "";
        throw new ConfigException(where + entry.getKey() + " and " + other + " are both " + entry.getValue()
            + " (each listener needs its own port)");
      }
    }
  }

  /** The TLS keys that only make sense together, and certificates that must match their keys. */
  private static void checkTls(Map<String, Setting> settings) throws ConfigException {
    requireBoth(settings, "tls-cert", "tls-key");
    requireBoth(settings, "upstream-cert", "upstream-key");
    requires(settings, "tls-client-ca", "tls-cert", "mTLS needs TLS");
    requires(settings, "tls-node-id-pattern", "tls-client-ca", "the node id is checked against the client certificate");
    Setting upstreamTls = settings.get("upstream-tls");
    if (upstreamTls != null && upstreamTls.value().equals("false")) {
      for (String key : List.of("upstream-ca", "upstream-cert")) {
        if (settings.containsKey(key)) {
          throw new ConfigException(upstreamTls.where() + ": upstream-tls is false, but " + key + " is given at "
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

  private static void requireBoth(Map<String, Setting> settings, String a, String b) throws ConfigException {
    requires(settings, a, b, "the one is no use without the other");
    requires(settings, b, a, "the one is no use without the other");
  }

  private static void requires(Map<String, Setting> settings, String key, String needed, String why)
      throws ConfigException {
    if (settings.containsKey(key) && !settings.containsKey(needed)) {
      throw new ConfigException(settings.get(key).where() + ": " + key + " is given without " + needed + " (" + why + ")");
    }
  }

  private ProxyConfig with(String key, Setting setting) throws ConfigException {
    return switch (key) {
      case "upstream" -> {
        List<String> targets = List.of(setting.value().split(",", -1));
        for (String target : targets) {
          if (!target.matches("[^\\s:,]+:\\d{1,5}") && !target.matches("\\[[0-9a-fA-F:.]+\\]:\\d{1,5}")) {
            throw new ConfigException(setting.where() + ": upstream '" + target + "' is not HOST:PORT");
          }
        }
        yield edit(b -> b.upstream = targets);
      }
      case "upstream-backoff-initial" -> {
        Duration initial = duration(setting);
        yield withUpstreamBackoff(new Backoff(initial, max(initial, upstreamBackoff.max()), 2.0, 0.2));
      }
      case "upstream-backoff-max" -> {
        Duration max = duration(setting);
        if (max.compareTo(upstreamBackoff.initial()) < 0) {
          throw new ConfigException(setting.where() + ": the backoff's maximum is below its initial wait "
              + upstreamBackoff.initial().toMillis() + "ms");
        }
        yield withUpstreamBackoff(new Backoff(upstreamBackoff.initial(), max, 2.0, 0.2));
      }
      case "upstream-protocol" -> switch (setting.value()) {
        case "sotw" -> withUpstreamProtocol(AdsUpstream.Protocol.SOTW);
        case "delta" -> withUpstreamProtocol(AdsUpstream.Protocol.DELTA);
        default -> throw new ConfigException(
            setting.where() + ": upstream-protocol '" + setting.value() + "' is neither sotw nor delta");
      };
      case "resources-dir" -> withResourcesDir(Path.of(setting.value()));
      case "not-found-timeout" -> withNotFoundTimeout(duration(setting));
      case "rest-poll-timeout" -> withRestPollTimeout(duration(setting));
      case "group-idle-grace" -> withGroupIdleGrace(duration(setting));
      case "drain-time" -> withDrainTime(duration(setting));
      case "max-connection-age" -> withMaxConnectionAge(duration(setting));
      case "node-group-key" -> {
        try {
          NodeGroupRule.of(setting.values());
        } catch (IllegalArgumentException e) {
          throw new ConfigException(setting.where() + ": " + e.getMessage());
        }
        yield edit(b -> b.nodeGroupKey = setting.values());
      }
      case "upstream-node-id" -> edit(b -> b.upstreamNodeId = Optional.of(setting.value()));
      case "tls-cert" -> withTls(new ServerTls(Optional.of(certificates(setting)), tls.key(), tls.clientCa(),
          tls.nodeIdPattern()));
      case "tls-key" -> withTls(new ServerTls(tls.cert(), Optional.of(privateKey(setting)), tls.clientCa(),
          tls.nodeIdPattern()));
      case "tls-client-ca" -> withTls(new ServerTls(tls.cert(), tls.key(), Optional.of(certificates(setting)),
          tls.nodeIdPattern()));
      case "tls-node-id-pattern" -> {
        try {
          new NodeIdPattern(setting.value());
        } catch (IllegalArgumentException e) {
          throw new ConfigException(setting.where() + ": " + e.getMessage());
        }
        yield withTls(new ServerTls(tls.cert(), tls.key(), tls.clientCa(), Optional.of(setting.value())));
      }
      case "upstream-tls" -> switch (setting.value()) {
        case "true" -> withUpstreamTls(new UpstreamTls(true, upstreamTls.ca(), upstreamTls.cert(), upstreamTls.key(),
            upstreamTls.authority()));
        case "false" -> this;
        default -> throw new ConfigException(
            setting.where() + ": upstream-tls '" + setting.value() + "' is neither true nor false");
      };
      case "upstream-ca" -> withUpstreamTls(new UpstreamTls(true, Optional.of(certificates(setting)), upstreamTls.cert(),
          upstreamTls.key(), upstreamTls.authority()));
      case "upstream-cert" -> withUpstreamTls(new UpstreamTls(true, upstreamTls.ca(), Optional.of(certificates(setting)),
          upstreamTls.key(), upstreamTls.authority()));
      case "upstream-key" -> withUpstreamTls(new UpstreamTls(upstreamTls.enabled(), upstreamTls.ca(), upstreamTls.cert(),
          Optional.of(privateKey(setting)), upstreamTls.authority()));
      case "upstream-authority" -> {
        if (setting.value().isBlank() || setting.value().contains("/")) {
          throw new ConfigException(setting.where() + ": upstream-authority '" + setting.value() + "' is not a host name");
        }
        yield withUpstreamTls(new UpstreamTls(upstreamTls.enabled(), upstreamTls.ca(), upstreamTls.cert(),
            upstreamTls.key(), Optional.of(setting.value())));
      }
      case "max-request-bytes" -> withLimits(new Limits(count(setting, 1), limits.maxNamesPerRequest(),
          limits.maxNameLength(), limits.maxStreamsPerConnection(), limits.maxStreamsPerGroup(),
          limits.maxStreamsPerNode(), limits.requestsPerSecond()));
      case "max-names-per-request" -> withLimits(new Limits(limits.maxRequestBytes(), count(setting, 1),
          limits.maxNameLength(), limits.maxStreamsPerConnection(), limits.maxStreamsPerGroup(),
          limits.maxStreamsPerNode(), limits.requestsPerSecond()));
      case "max-name-length" -> withLimits(new Limits(limits.maxRequestBytes(), limits.maxNamesPerRequest(),
          count(setting, 1), limits.maxStreamsPerConnection(), limits.maxStreamsPerGroup(),
          limits.maxStreamsPerNode(), limits.requestsPerSecond()));
      case "max-streams-per-connection" -> withLimits(new Limits(limits.maxRequestBytes(), limits.maxNamesPerRequest(),
          limits.maxNameLength(), count(setting, 1), limits.maxStreamsPerGroup(), limits.maxStreamsPerNode(),
          limits.requestsPerSecond()));
      case "max-streams-per-group" -> withLimits(new Limits(limits.maxRequestBytes(), limits.maxNamesPerRequest(),
          limits.maxNameLength(), limits.maxStreamsPerConnection(), count(setting, 1), limits.maxStreamsPerNode(),
          limits.requestsPerSecond()));
      case "max-streams-per-node" -> withLimits(new Limits(limits.maxRequestBytes(), limits.maxNamesPerRequest(),
          limits.maxNameLength(), limits.maxStreamsPerConnection(), limits.maxStreamsPerGroup(), count(setting, 0),
          limits.requestsPerSecond()));
      case "max-requests-per-second" -> withLimits(new Limits(limits.maxRequestBytes(), limits.maxNamesPerRequest(),
          limits.maxNameLength(), limits.maxStreamsPerConnection(), limits.maxStreamsPerGroup(),
          limits.maxStreamsPerNode(), count(setting, 0)));
      case "upstream-keepalive-time" -> {
        Duration time = duration(setting);
        if (time.compareTo(Duration.ofSeconds(10)) < 0) {
          throw new ConfigException(setting.where() + ": upstream-keepalive-time must be at least 10s (gRPC pings no more often)");
        }
        yield withUpstreamKeepalive(new AdsUpstream.Keepalive(time, upstreamKeepalive.timeout()));
      }
      case "upstream-keepalive-timeout" ->
          withUpstreamKeepalive(new AdsUpstream.Keepalive(upstreamKeepalive.time(), duration(setting)));
      case "xds-port" -> withPorts(port(setting), monitoringPort, adminPort);
      case "monitoring-port" -> withPorts(xdsPort, port(setting), adminPort);
      case "admin-address" -> {
        if (setting.value().isBlank() || !setting.value().matches("[0-9A-Za-z.:_\\[\\]-]+")) {
          throw new ConfigException(setting.where() + ": admin-address '" + setting.value() + "' is not a host name or IP address");
        }
        yield withAdminAddress(setting.value());
      }
      case "admin-port" -> withPorts(xdsPort, monitoringPort, port(setting));
      case "rest-port" -> withRestPort(port(setting));
      case "log-format" -> switch (setting.value()) {
        case "text" -> withLogFormat(LogFormat.TEXT);
        case "json" -> withLogFormat(LogFormat.JSON);
        default -> throw new ConfigException(setting.where() + ": log-format '" + setting.value() + "' is neither text nor json");
      };
      case "log-level" -> {
        for (String level : setting.values()) {
          if (!level.matches("([A-Za-z_$][\\w$]*(\\.[A-Za-z_$][\\w$]*)*=)?(?i:error|warn|info|debug|trace)")) {
            throw new ConfigException(setting.where() + ": log-level '" + level
                + "' is not LEVEL or LOGGER=LEVEL, LEVEL one of error, warn, info, debug, trace");
          }
        }
        yield withLogLevels(setting.values());
      }
      default -> throw new IllegalStateException("unhandled key " + key);
    };
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

  /** The PEM private key file a setting names, checked to hold a key the proxy reads (see TlsFiles#privateKey). */
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

  private static int port(Setting setting) throws ConfigException {
    try {
      int port = Integer.parseInt(setting.value());
      if (port >= 0 && port <= 65535) {
        return port;
      }
    } catch (NumberFormatException e) {
      // falls through to the error below
    }
    throw new ConfigException(setting.where() + ": '" + setting.value() + "' is not a port number (0-65535)");
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
    throw new ConfigException(setting.where() + ": '" + setting.value() + "' is not a whole number of at least " + least);
  }

  private static Duration duration(Setting setting) throws ConfigException {
    Matcher matcher = DURATION.matcher(setting.value());
    if (!matcher.matches()) {
      throw new ConfigException(setting.where() + ": '" + setting.value() + "' is not a duration such as 500ms, 15s, 5m or 1h");
    }
    long amount = Long.parseLong(matcher.group(1));
    Duration duration = switch (matcher.group(2)) {
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

  /** The values of a key and where they were given, for error messages. */
  private record Setting(List<String> values, String where) {
    /** The one value of a key that takes one (the last given wins on the command line). */
    String value() {
      return values.get(values.size() - 1);
    }
  }

  private static Map<String, Setting> readFile(Path file) throws ConfigException {
    Node root;
    try (Reader reader = Files.newBufferedReader(file)) {
      root = new Yaml(new LoaderOptions()).compose(reader);
    } catch (IOException e) {
      throw new ConfigException("cannot read config file " + file + ": " + e.getMessage());
    } catch (RuntimeException e) {
      throw new ConfigException("config file " + file + " is not valid YAML: " + e.getMessage().replace('\n', ' '));
    }
    Map<String, Setting> settings = new LinkedHashMap<>();
    if (root == null) {
      return settings;
    }
    if (!(root instanceof MappingNode mapping)) {
      throw new ConfigException(file + ": the config file must be a mapping of keys to values");
    }
    for (NodeTuple tuple : mapping.getValue()) {
      int line = tuple.getKeyNode().getStartMark().getLine() + 1;
      String where = file + " line " + line;
      if (!(tuple.getKeyNode() instanceof ScalarNode key) || !KEYS.contains(key.getValue())) {
        throw new ConfigException(where + ": unknown key " + describe(tuple.getKeyNode()) + " (known: " + String.join(", ", KEYS) + ")");
      }
      List<String> values = new ArrayList<>();
      if (tuple.getValueNode() instanceof ScalarNode value) {
        values.add(value.getValue());
      } else if (tuple.getValueNode() instanceof SequenceNode list && LIST_KEYS.contains(key.getValue())) {
        for (Node item : list.getValue()) {
          if (!(item instanceof ScalarNode scalar)) {
            throw new ConfigException(where + ": the items of " + key.getValue() + " must be single values");
          }
          values.add(scalar.getValue());
        }
      } else {
        throw new ConfigException(where + ": key " + key.getValue() + " needs a single value"
            + (LIST_KEYS.contains(key.getValue()) ? " or a list" : ""));
      }
      settings.put(key.getValue(), new Setting(values, where + " (" + key.getValue() + ")"));
    }
    return settings;
  }

  private static String describe(Node node) {
    return node instanceof ScalarNode scalar ? "'" + scalar.getValue() + "'" : "of kind " + node.getNodeId();
  }

  /** A configuration error; its message is the one line the proxy prints before exiting. */
  public static final class ConfigException extends Exception {
    public ConfigException(String message) {
      super(message);
    }
  }
}
