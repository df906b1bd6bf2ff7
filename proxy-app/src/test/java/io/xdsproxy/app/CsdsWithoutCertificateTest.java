package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.serving;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.status.v3.ClientStatusDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.status.v3.ClientStatusRequest;
import io.envoyproxy.envoy.service.status.v3.ClientStatusResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.xdsproxy.app.testing.ClientStatusStreams;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.TcpBalancer;
import io.xdsproxy.core.TypeUrl;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Client status (CSDS) on a plaintext xDS port, where no caller proves who it is: the pod itself
 * (127.0.0.1, as {@code kubectl port-forward}) is told of every stream, as the admin port shows
 * every group, and a caller from anywhere else is refused, since nothing proves which streams are
 * its own.
 */
class CsdsWithoutCertificateTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    proxy = fixture.proxy(serving(Path.of("../deploy/examples/resources")));
    var client = fixture.sotwAds();
    client.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("shop-pod-1", "shop"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    client.next(WAIT);
  }

  private ManagedChannel channel(InetSocketAddress address) {
    ManagedChannel channel = NettyChannelBuilder.forAddress(address).usePlaintext().build();
    fixture.add((AutoCloseable) channel::shutdownNow);
    return channel;
  }

  private static ClientStatusResponse fetch(ManagedChannel channel) {
    return ClientStatusDiscoveryServiceGrpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .fetchClientStatus(ClientStatusRequest.getDefaultInstance());
  }

  /**
   * Asks from {@code elsewhere}, by fetch and by stream, and checks that both are refused naming
   * the flags, counted, and told nothing.
   */
  private void assertRefused(ManagedChannel elsewhere) throws Exception {
    assertThatThrownBy(() -> fetch(elsewhere))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
              assertThat(e.getStatus().getDescription())
                  .contains("without a client certificate")
                  .contains("--tls-client-ca")
                  .contains("--client-status-admin");
            });
    List<ClientStatusResponse> responses = new java.util.concurrent.CopyOnWriteArrayList<>();
    CompletableFuture<Status> end = new CompletableFuture<>();
    ClientStatusStreams.open(elsewhere, responses, end)
        .onNext(ClientStatusRequest.getDefaultInstance());
    assertThat(end.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).getCode())
        .isEqualTo(Status.Code.PERMISSION_DENIED);
    assertThat(responses).isEmpty();
    assertThat(fixture.scrape())
        .contains("xds_downstream_denied_total{reason=\"client_status\"} 2.0");
  }

  @Test
  void aCallerFromTheLoopbackIsToldOfEveryStream() {
    ManagedChannel local = channel(new InetSocketAddress("127.0.0.1", proxy.xdsPort()));

    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(fetch(local).getConfigList())
                    .extracting(config -> config.getNode().getId())
                    .containsExactly("shop-pod-1"));
    assertThat(fixture.scrape())
        .contains("xds_downstream_denied_total{reason=\"client_status\"} 0.0");
  }

  /**
   * A sidecar relays every inbound connection from the loopback, Istio's from 127.0.0.6: a caller
   * so relayed is not the pod's operator.
   */
  @Test
  void aCallerRelayedFromAnotherLoopbackAddressIsRefusedNamingTheFlags() throws Exception {
    TcpBalancer sidecar =
        fixture.add(
            new TcpBalancer(
                List.of(new InetSocketAddress("127.0.0.1", proxy.xdsPort())),
                InetAddress.getByName("127.0.0.6")));

    assertRefused(channel(new InetSocketAddress("127.0.0.1", sidecar.port())));
  }

  /** A caller from another host, as near as one test machine gets: another of its addresses. */
  @Test
  void aCallerFromANetworkAddressIsRefused() throws Exception {
    Optional<InetAddress> network = networkAddress();
    assumeTrue(network.isPresent(), "this machine has no address but the loopback");

    assertRefused(channel(new InetSocketAddress(network.get(), proxy.xdsPort())));
  }

  /** An IPv4 address of this machine's that is not a loopback one (the proxy listens on all). */
  private static Optional<InetAddress> networkAddress() throws SocketException {
    return NetworkInterface.networkInterfaces()
        .filter(
            network -> {
              try {
                return network.isUp() && !network.isLoopback();
              } catch (SocketException e) {
                return false;
              }
            })
        .flatMap(NetworkInterface::inetAddresses)
        .filter(address -> address instanceof Inet4Address && !address.isLinkLocalAddress())
        .findFirst();
  }
}
