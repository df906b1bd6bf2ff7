package io.xdsproxy.app;

import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpsConfigurator;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.ChannelzService;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.protobuf.services.ProtoReflectionService;
import io.grpc.protobuf.services.ProtoReflectionServiceV1;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.xdsproxy.core.GroupAuditor;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.SavedStates;
import io.xdsproxy.core.Ticker;
import io.xdsproxy.core.UpstreamNodes;
import io.xdsproxy.core.UpstreamSource;
import io.xdsproxy.core.WorkLanes;
import io.xdsproxy.downstream.xds.Access;
import io.xdsproxy.downstream.xds.AggregatedDiscoveryService;
import io.xdsproxy.downstream.xds.ClientStatusDiscovery;
import io.xdsproxy.downstream.xds.Clients;
import io.xdsproxy.downstream.xds.PeerInterceptor;
import io.xdsproxy.downstream.xds.PerTypeServices;
import io.xdsproxy.downstream.xds.RestDiscovery;
import io.xdsproxy.downstream.xds.ServerContext;
import io.xdsproxy.downstream.xds.StreamMetrics;
import io.xdsproxy.upstream.fs.FileSystemSource;
import io.xdsproxy.upstream.fs.StateDir;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A running proxy: its upstream source, node groups, xDS server and admin server. */
public final class XdsProxy implements AutoCloseable {

  /**
   * The xDS event loops' lag above which newcomers' work waits (WorkLanes' gate): above what an
   * update's own writes to some thousands of streams make them lag (bench/RESULTS.md, "The event
   * loops' lag").
   */
  static final long LAG_FOR_NEWCOMERS = TimeUnit.MILLISECONDS.toNanos(10);

  /**
   * ... and have at least this many tasks waiting, all together: a loop that lags with nothing
   * queued is one the kernel is slow to run (a CPU-throttled pod), and holding newcomers then would
   * only starve them (one task per WorkLanes.MOST_HELD).
   */
  static final int BACKLOG_FOR_NEWCOMERS = 32;

  /** The most entries one channelz answer lists (the servers, a server's sockets). */
  private static final int CHANNELZ_PAGE_SIZE = 100;

  private static final Logger log = LoggerFactory.getLogger(XdsProxy.class);

  private final ThreadPoolExecutor pool;
  private final WorkLanes lanes;
  private final ScheduledExecutorService timer;
  private final PrometheusMeterRegistry meters;
  private final HealthStatusManager health = new HealthStatusManager();
  private volatile boolean closing;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Clients clients;
  private final UpstreamSource upstream;
  private final Optional<StateDir> stateDir;
  private final NodeGroups groups;
  private final Optional<GroupAuditor> auditor;
  private final ServerEventLoops loops;
  private final Server server;
  private final AdminServer monitoringServer;
  private final AdminServer admin;
  private final Optional<AdminServer> rest;
  private final Optional<TlsProvider.Chosen> tlsProvider;

  private XdsProxy(ProxyConfig config) throws IOException {
    try {
      // As ProxyConfig.parse does for the command line: a proxy made in code is held to it too.
      config.tenancy().check(config.tls());
    } catch (ProxyConfig.ConfigException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
    // Read before anything starts: a template that does not read stops the proxy at once.
    UpstreamNodes upstreamNodes = config.tenancy().upstreamNodes();
    // Not Executors' single-thread wrapper, which would hide the pool from the executor metrics.
    timer = new ScheduledThreadPoolExecutor(1, threads("xds-proxy-timer"));
    meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    loops = new ServerEventLoops(0, timer, Ticker.SYSTEM, meters);
    // A fixed pool, as Executors makes one, on a queue in two lanes: updates to the streams already
    // served go ahead of newcomers' first states, which get at most a fifth of the workers' time
    // while updates wait, and are written no faster than the xDS port's event loops keep up with (a
    // newcomer's state costs its loop much more than its worker, and the same loops write every
    // update), so a reconnect storm does not delay the updates.
    int workers = Math.max(2, Runtime.getRuntime().availableProcessors());
    lanes =
        new WorkLanes(
            Ticker.SYSTEM,
            () ->
                closing
                    || loops.lagNanos() < LAG_FOR_NEWCOMERS
                    || loops.backlog() < BACKLOG_FOR_NEWCOMERS);
    pool =
        new ThreadPoolExecutor(
            workers, workers, 0, TimeUnit.MILLISECONDS, lanes, threads("xds-proxy-worker"));
    ProxyMeters.bind(meters, pool, timer, lanes);
    try {
      upstream =
          !config.upstream().isEmpty()
              ? new AdsUpstream(
                  new AdsUpstream.Settings(
                      config.upstream(),
                      config.upstreamProtocol(),
                      config.upstreamBackoff(),
                      config.notFoundTimeout(),
                      config.upstreamTls(),
                      config.upstreamKeepalive(),
                      config.upstreamMaxNewSessionsPerSecond()),
                  pool,
                  timer,
                  meters)
              : new FileSystemSource(config.resourcesDir().toAbsolutePath().normalize());
    } catch (IOException e) {
      stopThreads();
      throw e;
    }
    try {
      stateDir =
          config.stateDir().isPresent()
              ? Optional.of(
                  new StateDir(
                      config.stateDir().get().toAbsolutePath().normalize(),
                      config.stateIncludeSecrets(),
                      Clock.systemUTC(),
                      config.notFoundTimeout(),
                      BuildInfo.CURRENT.version(),
                      meters))
              : Optional.empty();
    } catch (IOException e) {
      upstream.close();
      stopThreads();
      throw e;
    }
    groups =
        new NodeGroups(
            config.tenancy().rule(),
            upstreamNodes,
            upstream,
            pool,
            timer,
            Ticker.SYSTEM,
            config.groupIdleGrace(),
            meters,
            stateDir.<SavedStates>map(dir -> dir).orElse(SavedStates.NONE));
    auditor = Audits.auditor(config, upstream, groups, pool, timer, meters);
    clients = new Clients();
    Access access = config.tenancy().access(config.tls());
    StreamMetrics streamMetrics = new StreamMetrics(meters);
    ServerContext serving =
        new ServerContext(
            groups,
            pool,
            streamMetrics,
            clients,
            Clock.systemUTC(),
            timer,
            config.limits(),
            access,
            null);
    ServerServiceDefinition ads = AggregatedDiscoveryService.definition(serving);
    List<ServerServiceDefinition> perType = PerTypeServices.definitions(serving);
    List<ServerServiceDefinition> xds = new ArrayList<>(perType);
    xds.add(ads);
    Server started = null;
    AdminServer monitoringStarted = null;
    AdminServer adminStarted = null;
    AdminServer restStarted = null;
    Optional<XdsPortTls> tls = Optional.empty();
    try {
      InetSocketAddress xdsAddress = new InetSocketAddress(config.xdsPort());
      tls = XdsPortTls.load(config.tls(), timer, meters);
      tls.ifPresent(port -> ProxyMeters.bindTlsProvider(meters, port.provider()));
      ServerCredentials credentials =
          tls.isPresent() ? tls.get().grpc() : InsecureServerCredentials.create();
      NettyServerBuilder builder =
          XdsTransport.builder(xdsAddress, credentials, config, loops, meters);
      PeerInterceptor peers = new PeerInterceptor();
      builder.addService(ServerInterceptors.intercept(ads, peers));
      perType.forEach(service -> builder.addService(ServerInterceptors.intercept(service, peers)));
      // So that grpcurl lists and describes the services without their protos, and shows the
      // server's connections and calls (channelz). These, unlike xDS, run on the workers.
      List.of(
              health.getHealthService().bindService(),
              ProtoReflectionServiceV1.newInstance().bindService(),
              ProtoReflectionService.newInstance().bindService(),
              ChannelzService.newInstance(CHANNELZ_PAGE_SIZE).bindService())
          .forEach(service -> builder.addService(OnWorkers.intercept(service, pool)));
      // Client status tells a caller what its connection entitles it to: the peer interceptor,
      // outermost, puts what the connection proved into the call's context as the call starts on
      // its event loop, and OnWorkers carries that context to each callback on the workers.
      builder.addService(
          ServerInterceptors.intercept(
              OnWorkers.intercept(
                  new ClientStatusDiscovery(
                          clients, config.tenancy().clientStatusAccess(), streamMetrics)
                      .bindService(),
                  pool),
              peers));
      builder.addStreamTracerFactory(streamMetrics.endedStreams(xds));
      started = listen(builder.build(), "xDS", config.xdsPort());
      Map<String, HttpHandler> monitoring =
          new HashMap<>(AdminServer.probes(this::ready, this::readiness));
      monitoring.put(
          "/metrics", AdminServer.text(meters::scrape, "text/plain; version=0.0.4; charset=utf-8"));
      monitoringStarted =
          http(
              "monitoring HTTP",
              new InetSocketAddress(config.monitoringPort()),
              monitoring,
              Optional.empty());
      Map<String, HttpHandler> debug = new HashMap<>();
      debug.put(
          "/config_dump",
          new ConfigDump(
              groups,
              Clock.systemUTC(),
              group -> auditor.flatMap(audits -> audits.lastResult(group)),
              auditor.isPresent()));
      debug.put("/logging", new LogLevels());
      debug.put(
          "/clients",
          AdminServer.text(
              () -> ConfigDump.GSON.toJson(Map.of("clients", clients.statuses())) + "\n",
              "application/json"));
      adminStarted =
          http(
              "admin HTTP",
              new InetSocketAddress(config.adminAddress(), config.adminPort()),
              debug,
              Optional.empty());
      if (config.restPort().isPresent()) {
        // REST-JSON is xDS too: the xDS port's TLS, client certificates and node id check, or none
        // of them.
        RestDiscovery rest =
            new RestDiscovery(
                groups,
                pool,
                timer,
                config.restPollTimeout(),
                access,
                config.limits(),
                streamMetrics);
        Map<String, HttpHandler> handlers = new HashMap<>();
        RestDiscovery.PATHS.forEach((path, type) -> handlers.put(path, rest.handler(type)));
        restStarted =
            http(
                "REST-JSON xDS",
                new InetSocketAddress(config.restPort().get()),
                handlers,
                tls.isPresent() ? Optional.of(tls.get().https()) : Optional.empty());
      }
    } catch (IOException | RuntimeException e) {
      if (started != null) {
        started.shutdownNow();
      }
      for (AdminServer listener :
          new AdminServer[] {monitoringStarted, adminStarted, restStarted}) {
        if (listener != null) {
          listener.close();
        }
      }
      closeQuietly();
      throw e;
    }
    server = started;
    monitoringServer = monitoringStarted;
    admin = adminStarted;
    rest = Optional.ofNullable(restStarted);
    tlsProvider = tls.map(XdsPortTls::provider);
    // The gRPC health service on the xDS port follows readiness (checked each second).
    timer.scheduleWithFixedDelay(
        () -> health.setStatus("", ready() ? ServingStatus.SERVING : ServingStatus.NOT_SERVING),
        0,
        1,
        TimeUnit.SECONDS);
  }

  /**
   * Ready: listening, not shutting down, and the upstream reached at least once (a directory always
   * is) or a state saved before a restart found in the state directory, so a load balancer sends
   * clients only to a replica that can serve them. Fail-static is the point of the state directory:
   * Envoys reconnecting during a control plane outage must be sent to the replica that has it.
   */
  public boolean ready() {
    return !closing
        && !pool.isShutdown()
        && (upstream.reached() || stateDir.flatMap(StateDir::foundWrittenAt).isPresent());
  }

  /** What {@code /readyz} says besides ready or not: where what is served comes from. */
  private String readiness() {
    if (upstream.reached() || closing) {
      return "";
    }
    Optional<java.time.Instant> saved = stateDir.flatMap(StateDir::foundWrittenAt);
    if (saved.isEmpty()) {
      return "the upstream has not been reached yet";
    }
    return "serving state from disk (state directory "
        + stateDir.get().directory()
        + ", saved "
        + java.time.Duration.between(saved.get(), Clock.systemUTC().instant()).toSeconds()
        + "s ago, at "
        + saved.get()
        + "); the upstream has not been reached yet";
  }

  private AdminServer http(
      String what,
      InetSocketAddress address,
      Map<String, HttpHandler> handlers,
      Optional<HttpsConfigurator> tls)
      throws IOException {
    try {
      return new AdminServer(address, handlers, pool, tls);
    } catch (IOException e) {
      throw new IOException(
          "cannot listen for " + what + " on " + address + ": " + e.getMessage(), e);
    }
  }

  private static Server listen(Server server, String what, int port) throws IOException {
    try {
      return server.start();
    } catch (IOException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      throw new IOException(
          "cannot listen for " + what + " on port " + port + ": " + cause.getMessage(), e);
    }
  }

  /**
   * Starts a proxy as {@code config} says.
   *
   * @throws IOException when a port cannot be bound or the resources directory cannot be read; the
   *     message is the one line to print
   */
  public static XdsProxy start(ProxyConfig config) throws IOException {
    return new XdsProxy(config);
  }

  public int xdsPort() {
    return ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
  }

  /** Where health, readiness and metrics are served. */
  public int monitoringPort() {
    return monitoringServer.port();
  }

  /**
   * Where the debug endpoints are served: {@code /config_dump}, {@code /clients}, {@code /logging}.
   */
  public int adminPort() {
    return admin.port();
  }

  /** Where REST-JSON xDS is served, if it is. */
  public Optional<Integer> restPort() {
    return rest.map(AdminServer::port);
  }

  public NodeGroups groups() {
    return groups;
  }

  /** The worker pool every executor of the proxy runs on: for tests that hold its workers. */
  ThreadPoolExecutor workers() {
    return pool;
  }

  /** The proxy's meters, as {@code /metrics} shows them: for tests that read one in process. */
  MeterRegistry meters() {
    return meters;
  }

  /**
   * The TLS implementation of the xDS port ({@code openssl} or {@code jdk}), and why {@code auto}
   * fell back to the JDK's if it did; empty for plaintext.
   */
  public Optional<TlsProvider.Chosen> tlsProvider() {
    return tlsProvider;
  }

  public String describeUpstream() {
    return upstream.describe();
  }

  /**
   * Leaves gracefully, as on SIGTERM: readiness and gRPC health turn off (so the load balancer
   * stops sending clients), the xDS port stops taking connections and sends GOAWAY on the open
   * ones, the open streams get up to {@code drainTime} to end (clients reconnect elsewhere), and
   * then the proxy closes.
   */
  public void drain(Duration drainTime) {
    closing = true;
    health.setStatus("", ServingStatus.NOT_SERVING);
    server.shutdown();
    try {
      if (!server.awaitTermination(drainTime.toMillis(), TimeUnit.MILLISECONDS)) {
        log.info("drain time {} over with streams still open; ending them", drainTime);
        clients.endAll(Status.UNAVAILABLE.withDescription("xds-proxy is shutting down; reconnect"));
        server.awaitTermination(1, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    close();
  }

  @Override
  public void close() {
    if (closed.getAndSet(true)) {
      return;
    }
    closing = true;
    health.enterTerminalState();
    server.shutdownNow();
    try {
      // The transports finish closing on the worker pool: it is shut down only after them.
      server.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    monitoringServer.close();
    admin.close();
    rest.ifPresent(AdminServer::close);
    closeQuietly();
  }

  private void closeQuietly() {
    auditor.ifPresent(GroupAuditor::close);
    groups.close();
    // The last changes the groups saw are written before the proxy exits.
    stateDir.ifPresent(StateDir::close);
    upstream.close();
    stopThreads();
  }

  /** Stops the timer, the workers and then the xDS port's event loops. */
  private void stopThreads() {
    timer.shutdownNow();
    pool.shutdown();
    try {
      // What the workers still run may write to the streams' channels: their loops close after.
      pool.awaitTermination(2, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    loops.close();
  }

  private static ThreadFactory threads(String prefix) {
    AtomicInteger count = new AtomicInteger();
    return task -> {
      Thread thread = new Thread(task, prefix + "-" + count.incrementAndGet());
      thread.setDaemon(true);
      return thread;
    };
  }
}
