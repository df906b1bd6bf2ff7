package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Attributes;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2ConnectionHandlerBuilder;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What one peer may cost the xDS port's transport (DESIGN invariant 12), against the real proxy on
 * loopback: a connection that resets streams as fast as it opens them (HTTP/2 rapid reset) is sent
 * GOAWAY and closed; connections past the limits, per address and in all, are closed as they are
 * accepted. Throughout, the client already connected is served, and a place freed is taken again.
 * Linux routes all of 127/8 to the loopback, so clients bound to 127.0.0.2 and 127.0.0.3 are other
 * addresses.
 */
class TransportLimitsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String ADS_PATH =
      "/" + AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod().getFullMethodName();

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private final List<Socket> sockets = new ArrayList<>();

  /** The clusters upstream: each check that a client is served adds one. */
  private final List<Cluster> clusters = new ArrayList<>(List.of(Resources.cluster("a")));

  private ControlPlane controlPlane;

  @BeforeEach
  void startControlPlane() throws Exception {
    controlPlane = fixture.controlPlane();
    publish("1");
  }

  @AfterEach
  void closeSockets() throws IOException {
    for (Socket socket : sockets) {
      socket.close();
    }
  }

  private void publish(String version) {
    controlPlane.setSnapshot(
        "fleet", Snapshot.create(clusters, List.of(), List.of(), List.of(), List.of(), version));
  }

  private XdsProxy proxy(TransportLimits limits) throws IOException {
    return fixture.proxy(against(controlPlane.target()).withTransportLimits(limits));
  }

  /** A SotW ADS client of the proxy, on a connection of its own, that has the clusters. */
  private XdsTestClient<DiscoveryRequest, DiscoveryResponse> established() {
    XdsTestClient<DiscoveryRequest, DiscoveryResponse> client = fixture.sotwAds();
    client.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("established", "fleet"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    assertThat(client.next(WAIT).getResourcesCount()).isEqualTo(1);
    return client;
  }

  /** The client is still served: a cluster added upstream reaches it. */
  private void stillServed(
      XdsTestClient<DiscoveryRequest, DiscoveryResponse> client, String version) {
    clusters.add(Resources.cluster("b-" + version));
    publish(version);
    DiscoveryResponse update = client.next(WAIT);
    assertThat(update.getResourcesCount()).as(client.transcript()).isEqualTo(clusters.size());
    client.send(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo(version)
            .setResponseNonce(update.getNonce())
            .build());
  }

  private double meter(String name, String limit) {
    return fixture.proxy().meters().get(name).tag("limit", limit).counter().count();
  }

  /** xDS streams the proxy has ended, whatever their status. */
  private double streamsEnded() {
    return fixture.proxy().meters().find("xds.downstream.streams.ended").counters().stream()
        .mapToDouble(counter -> counter.count())
        .sum();
  }

  private int openConnections() {
    return (int) fixture.proxy().meters().get("xds.connections").gauge().value();
  }

  @Test
  void aConnectionResettingStreamsPastTheLimitGetsGoawayAndIsClosedWhileOthersAreServed()
      throws Exception {
    // The default, as a replica runs without the flag.
    int limit = TransportLimits.DEFAULTS.maxStreamResetsPerConnection();
    XdsProxy proxy = fixture.proxy(against(controlPlane.target()));
    var client = established();
    EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    try {
      RapidReset attack = RapidReset.connect(loop, proxy.xdsPort());

      attack.openAndReset(1_000);

      await()
          .atMost(WAIT)
          .untilAsserted(
              () -> assertThat(attack.channel.isActive()).as("the connection is open").isFalse());
      assertThat(streamsEnded())
          .as("streams the proxy took from the connection, of the 1,000 it opened and reset")
          .isBetween((double) limit, limit + 2.0);
      assertThat(meter("xds.connections.closed", "stream_resets")).isEqualTo(1.0);
      stillServed(client, "2");

      // The GOAWAY itself, read by a client that resets one stream more than allowed and no more:
      // one that goes on writing may have it discarded by the reset of its closed connection.
      RapidReset oneTooMany = RapidReset.connect(loop, proxy.xdsPort());
      await().atMost(WAIT).until(() -> oneTooMany.settingsRead.get() >= 2);

      oneTooMany.openAndReset(limit + 1);

      await()
          .atMost(WAIT)
          .untilAsserted(
              () -> {
                assertThat(oneTooMany.goAwayError.get())
                    .as("the GOAWAY's error code")
                    .isEqualTo(Http2Error.ENHANCE_YOUR_CALM.code());
                assertThat(oneTooMany.channel.isActive()).as("the connection is open").isFalse();
              });
      assertThat(meter("xds.connections.closed", "stream_resets")).isEqualTo(2.0);
      stillServed(client, "3");
    } finally {
      loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void connectionsPastThePerAddressLimitAreClosedAtOnceWhileOtherAddressesAndOldClientsAreServed()
      throws Exception {
    XdsProxy proxy =
        proxy(TransportLimits.DEFAULTS.withMaxConnections(0).withMaxConnectionsPerAddress(3));
    var client = established(); // 127.0.0.1's first
    Socket second = connect("127.0.0.1", proxy.xdsPort());
    connect("127.0.0.1", proxy.xdsPort());
    assertThat(answered(second)).as("127.0.0.1's second connection").isTrue();

    Socket fourth = connect("127.0.0.1", proxy.xdsPort());

    assertThat(answered(fourth)).as("127.0.0.1's fourth connection").isFalse();
    assertThat(meter("xds.connections.refused", "per_address")).isEqualTo(1.0);
    try (ClientFrom other = clientFrom("127.0.0.2", proxy.xdsPort())) {
      other
          .client()
          .send(
              DiscoveryRequest.newBuilder()
                  .setNode(node("other", "fleet"))
                  .setTypeUrl(TypeUrl.CLUSTER.url())
                  .build());
      assertThat(other.client().next(WAIT).getResourcesCount())
          .as("127.0.0.2's client")
          .isEqualTo(1);
    }
    stillServed(client, "2");

    second.close();
    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(openConnections()).as("open connections, xds_connections").isEqualTo(2));
    assertThat(answered(connect("127.0.0.1", proxy.xdsPort())))
        .as("127.0.0.1's connection once one of its three closed")
        .isTrue();
    assertThat(answered(connect("127.0.0.1", proxy.xdsPort())))
        .as("and one more past the limit again")
        .isFalse();
  }

  @Test
  void connectionsPastTheTotalLimitAreClosedAtOnceWhileClientsAndMonitoringAreServed()
      throws Exception {
    XdsProxy proxy =
        proxy(TransportLimits.DEFAULTS.withMaxConnections(4).withMaxConnectionsPerAddress(0));
    var client = established();
    Socket second = connect("127.0.0.1", proxy.xdsPort());
    List<Socket> others = List.of(connect("127.0.0.2", proxy.xdsPort()), second);
    connect("127.0.0.2", proxy.xdsPort());
    for (Socket socket : others) {
      assertThat(answered(socket)).as("a connection within the limit").isTrue();
    }

    Socket fifth = connect("127.0.0.3", proxy.xdsPort());

    assertThat(answered(fifth)).as("the fifth connection, from an address of its own").isFalse();
    assertThat(meter("xds.connections.refused", "total")).isEqualTo(1.0);
    assertThat(meter("xds.connections.refused", "per_address")).isEqualTo(0.0);
    assertThat(fixture.get("/readyz").statusCode()).as("/readyz at the limit").isEqualTo(200);
    stillServed(client, "2");

    second.close();
    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(openConnections()).as("open connections, xds_connections").isEqualTo(3));
    assertThat(answered(connect("127.0.0.3", proxy.xdsPort())))
        .as("a connection once one of the four closed")
        .isTrue();
    assertThat(answered(connect("127.0.0.3", proxy.xdsPort())))
        .as("and one more past the limit again")
        .isFalse();
  }

  /**
   * A raw TCP connection from {@code address} to the xDS port, closed after the test; closed
   * already if the proxy reset it before the connect returned, as it may one it refuses.
   */
  private Socket connect(String address, int port) throws IOException {
    Socket socket = new Socket();
    sockets.add(socket);
    socket.bind(new InetSocketAddress(address, 0));
    try {
      socket.connect(new InetSocketAddress("127.0.0.1", port), (int) WAIT.toMillis());
      socket.setSoTimeout((int) WAIT.toMillis());
    } catch (SocketException e) {
      if (e instanceof java.net.ConnectException) {
        throw e; // nothing listening: not a refusal of the proxy's
      }
      socket.close();
    }
    return socket;
  }

  /**
   * Whether the proxy took the connection: sent the HTTP/2 client preface, a connection it took
   * answers with its SETTINGS frame; one it refused is closed (end of stream, or reset).
   */
  private static boolean answered(Socket socket) throws IOException {
    if (socket.isClosed()) {
      return false; // reset while connecting
    }
    try {
      socket
          .getOutputStream()
          .write(
              "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0"
                  .getBytes(StandardCharsets.ISO_8859_1));
      InputStream in = socket.getInputStream();
      return in.read() >= 0;
    } catch (SocketException e) {
      return false; // reset
    }
  }

  /** A SotW ADS client on a connection of its own from {@code address}. */
  private static ClientFrom clientFrom(String address, int port) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", port)
            .usePlaintext()
            .localSocketPicker(
                new NettyChannelBuilder.LocalSocketPicker() {
                  @Override
                  public InetSocketAddress createSocketAddress(
                      SocketAddress remote, Attributes attributes) {
                    return new InetSocketAddress(address, 0);
                  }
                })
            .build();
    return new ClientFrom(
        new XdsTestClient<>(
            channel, AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod()),
        channel);
  }

  /** A client and its connection, closed together. */
  private record ClientFrom(
      XdsTestClient<DiscoveryRequest, DiscoveryResponse> client, ManagedChannel channel)
      implements AutoCloseable {
    @Override
    public void close() {
      client.close();
      channel.shutdownNow();
    }
  }

  /**
   * A raw HTTP/2 client (prior knowledge, as the plaintext port speaks it) that opens ADS streams
   * and resets each at once: CVE-2023-44487's attack. Notes the GOAWAY it gets.
   */
  private static final class RapidReset {
    final AtomicLong goAwayError = new AtomicLong(-1);
    final AtomicInteger settingsRead = new AtomicInteger();
    Channel channel;
    Http2ConnectionHandler http2;

    static RapidReset connect(EventLoopGroup loop, int port) throws InterruptedException {
      RapidReset client = new RapidReset();
      client.channel =
          new Bootstrap()
              .group(loop)
              .channel(NioSocketChannel.class)
              .handler(
                  new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel channel) {
                      client.http2 =
                          new Http2ConnectionHandlerBuilder()
                              .server(false)
                              .frameListener(
                                  new Http2FrameAdapter() {
                                    @Override
                                    public void onGoAwayRead(
                                        ChannelHandlerContext ctx,
                                        int lastStreamId,
                                        long errorCode,
                                        ByteBuf debugData) {
                                      client.goAwayError.set(errorCode);
                                    }

                                    @Override
                                    public void onSettingsRead(
                                        ChannelHandlerContext ctx, Http2Settings settings) {
                                      client.settingsRead.incrementAndGet();
                                    }
                                  })
                              .build();
                      channel.pipeline().addLast(client.http2);
                    }
                  })
              .connect("127.0.0.1", port)
              .sync()
              .channel();
      return client;
    }

    /**
     * Opens {@code streams} ADS streams, resetting each right after its HEADERS, flushing every 20.
     */
    void openAndReset(int streams) {
      channel
          .eventLoop()
          .execute(
              () -> {
                ChannelHandlerContext ctx = channel.pipeline().context(http2);
                Http2Headers headers =
                    new DefaultHttp2Headers()
                        .method("POST")
                        .scheme("http")
                        .authority("127.0.0.1")
                        .path(ADS_PATH)
                        .add("content-type", "application/grpc")
                        .add("te", "trailers");
                for (int i = 0; i < streams && channel.isActive(); i++) {
                  int id = http2.connection().local().incrementAndGetNextStreamId();
                  http2.encoder().writeHeaders(ctx, id, headers, 0, false, ctx.newPromise());
                  http2.resetStream(ctx, id, Http2Error.CANCEL.code(), ctx.newPromise());
                  if (i % 20 == 19) {
                    ctx.flush();
                  }
                }
                ctx.flush();
              });
    }
  }
}
