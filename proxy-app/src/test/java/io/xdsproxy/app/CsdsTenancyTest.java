package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.core.v3.DataSource;
import io.envoyproxy.envoy.config.core.v3.TransportSocket;
import io.envoyproxy.envoy.config.listener.v3.FilterChain;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.CommonTlsContext;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.Secret;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.TlsCertificate;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.status.v3.ClientConfig;
import io.envoyproxy.envoy.service.status.v3.ClientConfig.GenericXdsConfig;
import io.envoyproxy.envoy.service.status.v3.ClientStatusDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.status.v3.ClientStatusRequest;
import io.envoyproxy.envoy.service.status.v3.ClientStatusResponse;
import io.envoyproxy.envoy.type.matcher.v3.NodeMatcher;
import io.envoyproxy.envoy.type.matcher.v3.StringMatcher;
import io.grpc.ChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.TlsChannelCredentials;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.app.testing.ClientStatusStreams;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Client status (CSDS) on a mutual-TLS xDS port shared by two tenants, each a namespace of SPIFFE
 * ids (its node group), each with a Secret and the shop with a Listener whose filter chain inlines
 * a private key. A caller is told only of the streams of its own certificate's names, unless its
 * certificate carries a name of {@code --client-status-admin}; contents are redacted for all.
 *
 * <p>The callers connect from 127.0.0.1, where a caller without a certificate would be taken for
 * the pod itself: a certificate, when there is one, decides (a sidecar relaying every caller from
 * the loopback must not make them all operators).
 */
class CsdsTenancyTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String NAMESPACE_OF_SPIFFE_ID = "san:^spiffe://[^/]+/ns/([^/]+)/";
  private static final String CART = "spiffe://cluster.local/ns/shop/sa/cart";
  private static final String VAULT = "spiffe://cluster.local/ns/bank/sa/vault";
  private static final String MALLORY = "spiffe://cluster.local/ns/eve/sa/mallory";
  private static final String OPERATOR = "spiffe://cluster.local/ns/ops/sa/admin";
  private static final String SHOP_KEY = "-----BEGIN PRIVATE KEY-----shop";
  private static final String BANK_KEY = "-----BEGIN PRIVATE KEY-----bank";
  private static final String LISTENER_KEY = "-----BEGIN PRIVATE KEY-----shop-ingress";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @TempDir Path dir;

  private Ca ca;

  private static Secret secret(String name, String key) {
    return Secret.newBuilder()
        .setName(name)
        .setTlsCertificate(
            TlsCertificate.newBuilder()
                .setCertificateChain(DataSource.newBuilder().setInlineString("chain of " + name))
                .setPrivateKey(DataSource.newBuilder().setInlineString(key)))
        .build();
  }

  /** A Listener terminating TLS with a key inlined in its filter chain's transport socket. */
  private static Listener ingress() {
    DownstreamTlsContext tls =
        DownstreamTlsContext.newBuilder()
            .setCommonTlsContext(
                CommonTlsContext.newBuilder()
                    .addTlsCertificates(
                        TlsCertificate.newBuilder()
                            .setPrivateKey(DataSource.newBuilder().setInlineString(LISTENER_KEY))))
            .build();
    return Listener.newBuilder()
        .setName("shop-ingress")
        .addFilterChains(
            FilterChain.newBuilder()
                .setTransportSocket(
                    TransportSocket.newBuilder()
                        .setName("envoy.transport_sockets.tls")
                        .setTypedConfig(Any.pack(tls))))
        .build();
  }

  @BeforeEach
  void start() throws Exception {
    ControlPlane controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot(
        "shop",
        Snapshot.create(
            List.of(Resources.cluster("shop")),
            List.of(),
            List.of(ingress()),
            List.of(),
            List.of(secret("shop-cert", SHOP_KEY)),
            "1"));
    controlPlane.setSnapshot(
        "bank",
        Snapshot.create(
            List.of(Resources.cluster("bank")),
            List.of(),
            List.of(),
            List.of(),
            List.of(secret("bank-cert", BANK_KEY)),
            "1"));
    ca = TestCertificates.ca("xds", dir);
    Issued server = ca.issue("proxy");
    ProxyConfig config =
        against(controlPlane.target())
            .withTls(ServerTls.of(server.cert(), server.key()).withClientCa(ca.pem()))
            .withNodeGroupKey(List.of("cluster=" + NAMESPACE_OF_SPIFFE_ID));
    fixture.proxy(config.withTenancy(config.tenancy().withClientStatusAdmins(List.of(OPERATOR))));

    subscribe(CART, node("shop-pod-1", "shop"), "shop-cert", true);
    subscribe(VAULT, node("bank-pod-1", "bank"), "bank-cert", false);
  }

  /** An ADS client with a certificate of {@code uri}, sent its clusters, Secret and Listeners. */
  private void subscribe(
      String uri, io.envoyproxy.envoy.config.core.v3.Node node, String secret, boolean listeners)
      throws Exception {
    var client =
        fixture.add(
            XdsTestClient.sotwAds(
                fixture.proxy().xdsPort(), credentials(ca.issue(node.getId(), uri))));
    List<DiscoveryRequest> requests = new ArrayList<>();
    requests.add(
        DiscoveryRequest.newBuilder().setNode(node).setTypeUrl(TypeUrl.CLUSTER.url()).build());
    requests.add(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.SECRET.url())
            .addResourceNames(secret)
            .build());
    if (listeners) {
      requests.add(DiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.LISTENER.url()).build());
    }
    for (DiscoveryRequest request : requests) {
      client.send(request);
      DiscoveryResponse response = client.next(WAIT);
      assertThat(response.getResourcesCount()).as(client.transcript()).isEqualTo(1);
    }
  }

  private ChannelCredentials credentials(Issued certificate) throws Exception {
    return TlsChannelCredentials.newBuilder()
        .trustManager(ca.pem().toFile())
        .keyManager(certificate.cert().toFile(), certificate.key().toFile())
        .build();
  }

  /** A CSDS caller with a certificate of {@code uri}. */
  private ManagedChannel caller(String name, String uri) throws Exception {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress(
                "127.0.0.1", fixture.proxy().xdsPort(), credentials(ca.issue(name, uri)))
            .build();
    fixture.add((AutoCloseable) channel::shutdownNow);
    return channel;
  }

  private static ClientStatusResponse fetch(ManagedChannel channel, ClientStatusRequest request) {
    return ClientStatusDiscoveryServiceGrpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .fetchClientStatus(request);
  }

  /** The responses to {@code requests}, sent one by one on one CSDS stream. */
  private static List<ClientStatusResponse> stream(
      ManagedChannel channel, ClientStatusRequest... requests) throws Exception {
    BlockingQueue<ClientStatusResponse> responses = new LinkedBlockingQueue<>();
    CompletableFuture<io.grpc.Status> end = new CompletableFuture<>();
    StreamObserver<ClientStatusRequest> stream = ClientStatusStreams.open(channel, responses, end);
    List<ClientStatusResponse> answered = new ArrayList<>();
    for (ClientStatusRequest request : requests) {
      stream.onNext(request);
      ClientStatusResponse response = responses.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(response).as("a response to " + request + ", stream " + end).isNotNull();
      answered.add(response);
    }
    stream.onCompleted();
    assertThat(end.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isEqualTo(io.grpc.Status.OK);
    return answered;
  }

  private static ClientStatusRequest matching(StringMatcher nodeId) {
    return ClientStatusRequest.newBuilder()
        .addNodeMatchers(NodeMatcher.newBuilder().setNodeId(nodeId))
        .build();
  }

  private static List<String> nodeIds(ClientStatusResponse response) {
    return response.getConfigList().stream().map(config -> config.getNode().getId()).toList();
  }

  private static GenericXdsConfig entry(ClientStatusResponse response, TypeUrl type, String name) {
    return response.getConfigList().stream()
        .map(ClientConfig::getGenericXdsConfigsList)
        .flatMap(List::stream)
        .filter(config -> config.getTypeUrl().equals(type.url()) && config.getName().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + name + " in " + response));
  }

  /** Every byte of {@code response}, as text: what must not be found in it is nowhere in it. */
  private static String bytesOf(ClientStatusResponse response) {
    return response.toByteString().toString(java.nio.charset.StandardCharsets.ISO_8859_1);
  }

  @Test
  void aTenantsCertificateIsToldOnlyOfItsOwnStreamsWhateverItAsks() throws Exception {
    ManagedChannel bank = caller("bank-debugger", VAULT);
    StringMatcher shopPod = StringMatcher.newBuilder().setExact("shop-pod-1").build();
    StringMatcher anyPod = StringMatcher.newBuilder().setSuffix("-pod-1").build();

    ClientStatusResponse all = fetch(bank, ClientStatusRequest.getDefaultInstance());
    List<ClientStatusResponse> streamed =
        stream(bank, ClientStatusRequest.getDefaultInstance(), matching(shopPod), matching(anyPod));

    for (ClientStatusResponse own :
        List.of(all, fetch(bank, matching(anyPod)), streamed.get(0), streamed.get(2))) {
      assertThat(nodeIds(own)).as(own.toString()).containsExactly("bank-pod-1");
      assertThat(bytesOf(own)).doesNotContain("shop").doesNotContain(BANK_KEY);
    }
    for (ClientStatusResponse other : List.of(fetch(bank, matching(shopPod)), streamed.get(1))) {
      assertThat(other.getConfigList()).as(other.toString()).isEmpty();
    }
    // Its own Secret too is shown without its key: client status is not how keys are delivered.
    Secret ownSecret = entry(all, TypeUrl.SECRET, "bank-cert").getXdsConfig().unpack(Secret.class);
    assertThat(ownSecret.getTlsCertificate().getPrivateKey().getInlineString())
        .isEqualTo("[redacted]");
    assertThat(ownSecret.getTlsCertificate().getCertificateChain().getInlineString())
        .isEqualTo("chain of bank-cert");
  }

  @Test
  void aCertificateOfTheCaWithNoStreamsOfItsOwnIsToldOfNone() throws Exception {
    ManagedChannel mallory = caller("mallory", MALLORY);

    assertThat(fetch(mallory, ClientStatusRequest.getDefaultInstance()).getConfigList()).isEmpty();
    assertThat(
            fetch(mallory, matching(StringMatcher.newBuilder().setPrefix("shop").build()))
                .getConfigList())
        .isEmpty();
    assertThat(stream(mallory, ClientStatusRequest.getDefaultInstance()).get(0).getConfigList())
        .isEmpty();
  }

  @Test
  void anOperatorsCertificateIsToldOfEveryStreamWithEveryKeyRedacted() throws Exception {
    ManagedChannel operator = caller("operator", OPERATOR);

    ClientStatusResponse all = fetch(operator, ClientStatusRequest.getDefaultInstance());

    assertThat(nodeIds(all)).containsExactly("bank-pod-1", "shop-pod-1");
    assertThat(bytesOf(all))
        .doesNotContain(SHOP_KEY)
        .doesNotContain(BANK_KEY)
        .doesNotContain(LISTENER_KEY);
    Listener listener =
        entry(all, TypeUrl.LISTENER, "shop-ingress").getXdsConfig().unpack(Listener.class);
    assertThat(
            listener
                .getFilterChains(0)
                .getTransportSocket()
                .getTypedConfig()
                .unpack(DownstreamTlsContext.class)
                .getCommonTlsContext()
                .getTlsCertificates(0)
                .getPrivateKey()
                .getInlineString())
        .isEqualTo("[redacted]");
    assertThat(
            entry(all, TypeUrl.SECRET, "shop-cert")
                .getXdsConfig()
                .unpack(Secret.class)
                .getTlsCertificate()
                .getPrivateKey()
                .getInlineString())
        .isEqualTo("[redacted]");
    // Node matchers still narrow what it is told of.
    assertThat(
            nodeIds(
                stream(operator, matching(StringMatcher.newBuilder().setPrefix("shop").build()))
                    .get(0)))
        .containsExactly("shop-pod-1");
  }

  /**
   * The shop's caller is told of the shop's stream, its Listener included with the key inlined in
   * it redacted, and of nothing of the bank's.
   */
  @Test
  void theOtherTenantIsToldOfItsOwnStreamsOnlyWithItsKeysRedacted() throws Exception {
    ClientStatusResponse shop =
        fetch(caller("shop-debugger", CART), ClientStatusRequest.getDefaultInstance());

    assertThat(nodeIds(shop)).containsExactly("shop-pod-1");
    assertThat(entry(shop, TypeUrl.LISTENER, "shop-ingress").hasXdsConfig()).isTrue();
    assertThat(bytesOf(shop))
        .doesNotContain("bank")
        .doesNotContain(SHOP_KEY)
        .doesNotContain(LISTENER_KEY);
  }
}
