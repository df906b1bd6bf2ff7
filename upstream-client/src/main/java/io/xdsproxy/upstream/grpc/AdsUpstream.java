package io.xdsproxy.upstream.grpc;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.ChannelCredentials;
import io.grpc.CompositeChannelCredentials;
import io.grpc.ConnectivityState;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.NettyChannelBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.xdsproxy.core.ClientFeatures;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.Ticker;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A control plane reached over gRPC ADS. One channel (one HTTP/2 connection) carries the sessions
 * of every node group, one stream each: invariant 1 of DESIGN.md.
 */
public final class AdsUpstream implements UpstreamSource {

  /**
   * Largest response accepted from the control plane: a big mesh's full CDS runs to tens of MiB.
   */
  static final int MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

  /**
   * HTTP/2 keepalive on the channels to the control plane: a PING after {@code time} without reads,
   * and the connection given up when its ack takes longer than {@code timeout}. It is what notices
   * a control plane that went silent without closing the connection (a dead host, a black-holing
   * network), so that the sessions reconnect or fail over. grpc-java raises a time under 10 s to 10
   * s.
   */
  public record Keepalive(Duration time, Duration timeout) {
    /**
     * The spec's advice for ADS connections, at intervals a control plane's ping policy usually
     * allows.
     */
    public static final Keepalive DEFAULT =
        new Keepalive(Duration.ofSeconds(30), Duration.ofSeconds(10));
  }

  /** The variant of ADS spoken to the control plane. */
  public enum Protocol {
    SOTW,
    DELTA
  }

  private final List<String> targets;
  private final Protocol protocol;
  private final List<ManagedChannel> channels;
  private final SessionContext context;
  private final AtomicBoolean reached = new AtomicBoolean();
  private final Transport transport;

  /**
   * The control plane's connections' own event loop, not gRPC's default one shared with the
   * downstream server: there, one loop carries thousands of clients' connections, and in a storm of
   * newcomers the session's ACKs and the control plane's next responses queued behind their first
   * states for seconds (java-control-plane and go-control-plane answer a SotW type's next version
   * only to the request that ACKs the last), so that the established clients got no update until
   * the storm had passed.
   */
  private final EventLoopGroup io;

  /** How the channels connect, and the TLS files watched for it. */
  private record Transport(
      ChannelCredentials credentials, UpstreamTls tls, List<TlsFiles.Watched<?>> watched) {}

  /**
   * How the control plane is reached.
   *
   * @param targets the control plane's addresses, {@code host:port} each, tried in turn when a
   *     stream fails; a DNS name is resolved, and re-resolved on reconnect
   * @param protocol State of the World or incremental ADS
   * @param notFoundTimeout how long a requested name may go unanswered before it is taken not to
   *     exist ("Knowing When a Requested Resource Does Not Exist": 15 s recommended)
   * @param tls plaintext or TLS, its files polled for changes
   * @param keepalive HTTP/2 keepalive's intervals
   * @param maxNewSessionsPerSecond streams started a second at most, on average (0: no limit;
   *     {@link StreamStarts})
   */
  public record Settings(
      List<String> targets,
      Protocol protocol,
      Backoff backoff,
      Duration notFoundTimeout,
      UpstreamTls tls,
      Keepalive keepalive,
      int maxNewSessionsPerSecond) {

    public Settings {
      if (targets.isEmpty()) {
        throw new IllegalArgumentException("an upstream needs at least one address");
      }
      targets = List.copyOf(targets);
    }

    /** Plaintext, default keepalive, streams started as fast as asked. */
    public static Settings plaintext(
        List<String> targets, Protocol protocol, Backoff backoff, Duration notFoundTimeout) {
      return new Settings(
          targets, protocol, backoff, notFoundTimeout, UpstreamTls.PLAINTEXT, Keepalive.DEFAULT, 0);
    }
  }

  /**
   * A control plane reached as {@code settings} say; the sessions run on {@code pool}, their timed
   * rules and the TLS files' polls on {@code timer}, and they count their NACKs, reconnects and
   * waits in {@code meters}.
   *
   * @throws IOException naming a TLS file that cannot be read or parsed
   */
  public AdsUpstream(
      Settings settings, Executor pool, ScheduledExecutorService timer, MeterRegistry meters)
      throws IOException {
    this(
        settings,
        pool,
        timer,
        meters,
        new StreamStarts(settings.maxNewSessionsPerSecond(), Ticker.SYSTEM, pool, timer, meters));
  }

  /** A control plane whose streams start as {@code starts} lets them: for tests. */
  AdsUpstream(
      Settings settings,
      Executor pool,
      ScheduledExecutorService timer,
      MeterRegistry meters,
      StreamStarts starts)
      throws IOException {
    List<String> targets = settings.targets();
    Transport transport = transport(settings.tls(), timer, meters);
    Keepalive keepalive = settings.keepalive();
    this.targets = targets;
    this.protocol = settings.protocol();
    this.transport = transport;
    this.io = new NioEventLoopGroup(1, new DefaultThreadFactory("xds-upstream-io", true));
    this.channels =
        this.targets.stream()
            .map(
                target ->
                    channel(target, transport)
                        .eventLoopGroup(io)
                        .channelType(NioSocketChannel.class)
                        .executor(pool)
                        .maxInboundMessageSize(MAX_RESPONSE_BYTES)
                        // The spec's advice for ADS connections: HTTP/2 keepalive detects a peer
                        // that went silent.
                        .keepAliveTime(keepalive.time().toMillis(), TimeUnit.MILLISECONDS)
                        .keepAliveTimeout(keepalive.timeout().toMillis(), TimeUnit.MILLISECONDS)
                        // A session's stream waits on a connection that has not finished its HTTP/2
                        // handshake (an address that accepts TCP and never answers): no call is on
                        // it yet, and only pings sent without calls notice that it never will, so
                        // the stream fails and goes to the next address.
                        .keepAliveWithoutCalls(true)
                        .build())
            .toList();
    // Readiness cannot wait for a session, which only the first client opens: each channel is
    // asked to connect at once, and watched until it first is READY.
    channels.forEach(this::watchUntilReady);
    this.context =
        new SessionContext(
            List.copyOf(channels),
            this.targets,
            pool,
            timer,
            settings.backoff(),
            settings.notFoundTimeout(),
            new Random(),
            meters,
            starts);
  }

  private static NettyChannelBuilder channel(String target, Transport transport) {
    NettyChannelBuilder builder = NettyChannelBuilder.forTarget(target, transport.credentials());
    transport.tls().authority().ifPresent(builder::overrideAuthority);
    return builder;
  }

  /**
   * The channels' credentials: TLS or plaintext ({@link #connection}), and the bearer token of
   * {@code tls}, if any, sent on every call.
   *
   * @throws IllegalArgumentException for a token without TLS, unless allowed
   */
  private static Transport transport(
      UpstreamTls tls, ScheduledExecutorService timer, MeterRegistry meters) throws IOException {
    if (tls.tokenFile().isPresent() && !tls.enabled() && !tls.tokenOverPlaintext()) {
      throw new IllegalArgumentException(
          "the upstream token (--upstream-token-file) is sent only over TLS: give --upstream-tls"
              + " true or --upstream-ca, or --upstream-token-over-plaintext true to send it in the"
              + " clear");
    }
    Transport transport = connection(tls, timer, meters);
    if (tls.tokenFile().isEmpty()) {
      return transport;
    }
    try {
      return new Transport(
          CompositeChannelCredentials.create(
              transport.credentials(),
              BearerTokenFile.read(tls.tokenFile().get(), tls.tokenOverPlaintext())),
          tls,
          transport.watched());
    } catch (IOException e) {
      transport.watched().forEach(TlsFiles.Watched::close);
      throw e;
    }
  }

  private static Transport connection(
      UpstreamTls tls, ScheduledExecutorService timer, MeterRegistry meters) throws IOException {
    if (!tls.enabled()) {
      return new Transport(InsecureChannelCredentials.create(), tls, List.of());
    }
    if (tls.cert().isPresent() != tls.key().isPresent()) {
      throw new IllegalArgumentException(
          "an upstream client certificate needs its key, and a key its certificate");
    }
    List<TlsFiles.Watched<?>> watched = new ArrayList<>();
    TlsChannelCredentials.Builder credentials = TlsChannelCredentials.newBuilder();
    try {
      if (tls.ca().isPresent()) {
        var trust =
            TlsFiles.trust(tls.ca().get(), true, timer, new TlsMetrics(meters, "upstream-ca"));
        watched.add(trust);
        credentials.trustManager(trust.manager());
      }
      if (tls.cert().isPresent()) {
        var identity =
            TlsFiles.identity(
                tls.cert().get(),
                tls.key().get(),
                timer,
                new TlsMetrics(meters, "upstream-client"));
        watched.add(identity);
        credentials.keyManager(identity.manager());
      }
    } catch (IOException | RuntimeException e) {
      watched.forEach(TlsFiles.Watched::close);
      throw e;
    }
    return new Transport(credentials.build(), tls, List.copyOf(watched));
  }

  @Override
  public UpstreamSession open(
      NodeGroupKey group, Node node, String tenant, UpstreamListener listener) {
    Node announcing = announcingWhatTheProxyReads(node);
    return switch (protocol) {
      case SOTW -> new SotwUpstreamSession(group, announcing, tenant, listener, context);
      case DELTA -> new DeltaUpstreamSession(group, announcing, tenant, listener, context);
    };
  }

  @Override
  public boolean auditable() {
    return true;
  }

  /**
   * On a stream of its own ({@link AuditSession}), to the first of the control plane's addresses
   * that is connected (else the first): replicas of one control plane serve a node alike. The node
   * announces what a group's session announces, so that the two are answered alike.
   */
  @Override
  public CompletableFuture<Map<TypeUrl, AuditedType>> audit(
      Node node, Map<TypeUrl, Interest> wanted) {
    int index = 0;
    for (int i = 0; i < channels.size(); i++) {
      if (channels.get(i).getState(false) == ConnectivityState.READY) {
        index = i;
        break;
      }
    }
    Node announcing = announcingWhatTheProxyReads(node);
    AuditSession<?, ?> session =
        switch (protocol) {
          case SOTW -> AuditSession.sotw(announcing, wanted, targets.get(index), context);
          case DELTA -> AuditSession.delta(announcing, wanted, targets.get(index), context);
        };
    return session.start(channels.get(index));
  }

  /**
   * {@code node}, announcing the client features the proxy reads whatever the group's first client
   * does: TTLs and heartbeats, and SotW resources wrapped in {@code Resource}. The proxy hands each
   * client only what that client announced; and when the upstream is another proxy (tiers), this is
   * what carries TTLs and {@code do_not_cache} across: a SotW upstream can mark do_not_cache only
   * on a wrapped resource.
   */
  private static Node announcingWhatTheProxyReads(Node node) {
    Node.Builder announcing = node.toBuilder();
    for (String feature :
        List.of(ClientFeatures.SUPPORTS_TTL, ClientFeatures.SUPPORTS_RESOURCE_IN_SOTW)) {
      if (!node.getClientFeaturesList().contains(feature)) {
        announcing.addClientFeatures(feature);
      }
    }
    return announcing.build();
  }

  private void watchUntilReady(ManagedChannel channel) {
    ConnectivityState state = channel.getState(true);
    if (state == ConnectivityState.READY) {
      reached.set(true);
    } else if (state != ConnectivityState.SHUTDOWN) {
      channel.notifyWhenStateChanged(state, () -> watchUntilReady(channel));
    }
  }

  @Override
  public boolean reached() {
    return reached.get();
  }

  @Override
  public String describe() {
    return "control plane "
        + String.join(", ", targets)
        + " ("
        + (protocol == Protocol.SOTW ? "SotW" : "Delta")
        + " ADS"
        + (transport.tls().enabled() ? " over TLS" : "")
        + transport.tls().authority().map(name -> ", as " + name).orElse("")
        + transport.tls().tokenFile().map(file -> ", with the bearer token in " + file).orElse("")
        + ")";
  }

  @Override
  public void close() {
    channels.forEach(ManagedChannel::shutdownNow);
    io.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    transport.watched().forEach(TlsFiles.Watched::close);
  }
}
