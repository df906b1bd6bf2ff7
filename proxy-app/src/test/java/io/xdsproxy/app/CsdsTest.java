package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.rpc.Status;
import io.envoyproxy.envoy.admin.v3.ClientResourceStatus;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.status.v3.ClientConfig;
import io.envoyproxy.envoy.service.status.v3.ClientConfig.GenericXdsConfig;
import io.envoyproxy.envoy.service.status.v3.ClientStatusDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.status.v3.ClientStatusRequest;
import io.envoyproxy.envoy.service.status.v3.ClientStatusResponse;
import io.envoyproxy.envoy.service.status.v3.ConfigStatus;
import io.envoyproxy.envoy.type.matcher.v3.NodeMatcher;
import io.envoyproxy.envoy.type.matcher.v3.RegexMatcher;
import io.envoyproxy.envoy.type.matcher.v3.StringMatcher;
import io.envoyproxy.envoy.type.matcher.v3.StructMatcher;
import io.envoyproxy.envoy.type.matcher.v3.ValueMatcher;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.app.testing.ClientStatusStreams;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Client status (CSDS) on the xDS port, asked over a real gRPC channel about real SotW and Delta
 * clients of a proxy fed by a scripted control plane: one client that ACKed its clusters, one that
 * NACKed them, and a Delta client with a cluster it ACKed, one the upstream does not have, and
 * endpoints the upstream has not answered for.
 *
 * <p>The port is plaintext and the caller connects from 127.0.0.1, the pod itself (as {@code
 * kubectl port-forward}), so it is told of every stream, as the admin port shows every group. Who
 * else is told what: CsdsWithoutCertificateTest, CsdsTenancyTest.
 */
class CsdsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Any CLUSTER_A = Any.pack(Resources.cluster("a"));
  private static final Any CLUSTER_B = Any.pack(Resources.cluster("b"));

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ScriptedControlPlane upstream;
  private XdsProxy proxy;
  private XdsTestClient<DiscoveryRequest, DiscoveryResponse> acking;
  private XdsTestClient<DiscoveryRequest, DiscoveryResponse> nacking;
  private XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> delta;
  private ManagedChannel channel;

  /** What the proxy sent each client, for the values CSDS must report. */
  private DiscoveryResponse ackedClusters;

  private DiscoveryResponse nackedClusters;
  private DeltaDiscoveryResponse deltaClusters;

  @BeforeEach
  void start() throws Exception {
    upstream = fixture.scriptedControlPlane();
    // Long enough that the unanswered endpoints stay unanswered however slow the machine.
    proxy = fixture.proxy(against(upstream.target()).withNotFoundTimeout(Duration.ofMinutes(5)));
    channel = NettyChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort()).usePlaintext().build();
    acking = fixture.sotwAds();
    nacking = fixture.sotwAds();
    delta = fixture.deltaAds();

    acking.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("acking-1", "fleet"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    upstream.nextRequest(WAIT);
    upstream.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo("u1")
            .setNonce("u1")
            .addResources(CLUSTER_A)
            .addResources(CLUSTER_B)
            .build());
    ackedClusters = acking.next(WAIT);
    acking.send(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo(ackedClusters.getVersionInfo())
            .setResponseNonce(ackedClusters.getNonce())
            .build());

    nacking.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("nacking-1", "fleet"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    nackedClusters = nacking.next(WAIT);
    nacking.send(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setResponseNonce(nackedClusters.getNonce())
            .setErrorDetail(
                Status.newBuilder()
                    .setCode(3)
                    .setMessage("cluster b: unknown load balancing policy"))
            .build());

    delta.send(
        DeltaDiscoveryRequest.newBuilder()
            .setNode(node("delta-1", "fleet"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .addResourceNamesSubscribe("a")
            .addResourceNamesSubscribe("missing")
            .build());
    deltaClusters = delta.next(WAIT);
    assertThat(deltaClusters.getRemovedResourcesList())
        .as(delta.transcript())
        .containsExactly("missing");
    delta.send(
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setResponseNonce(deltaClusters.getNonce())
            .build());
    delta.send(
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .addResourceNamesSubscribe("a")
            .build());
  }

  @AfterEach
  void stop() {
    channel.shutdownNow();
  }

  private ClientStatusResponse fetch(ClientStatusRequest request) {
    return ClientStatusDiscoveryServiceGrpc.newBlockingStub(channel)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .fetchClientStatus(request);
  }

  /**
   * Opens a CSDS stream whose responses go to {@code responses} and whose end completes {@code
   * end}.
   */
  private StreamObserver<ClientStatusRequest> stream(
      BlockingQueue<ClientStatusResponse> responses, CompletableFuture<io.grpc.Status> end) {
    return ClientStatusStreams.open(channel, responses, end);
  }

  private static ClientStatusRequest matching(StringMatcher nodeId) {
    return ClientStatusRequest.newBuilder()
        .addNodeMatchers(NodeMatcher.newBuilder().setNodeId(nodeId))
        .build();
  }

  private static List<String> nodeIds(ClientStatusResponse response) {
    return response.getConfigList().stream().map(config -> config.getNode().getId()).toList();
  }

  private static GenericXdsConfig entry(
      ClientStatusResponse response, String nodeId, TypeUrl type, String name) {
    ClientConfig client =
        response.getConfigList().stream()
            .filter(config -> config.getNode().getId().equals(nodeId))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no client '" + nodeId + "' in " + response));
    return client.getGenericXdsConfigsList().stream()
        .filter(config -> config.getTypeUrl().equals(type.url()) && config.getName().equals(name))
        .findFirst()
        .orElseThrow(
            () -> new AssertionError("no " + type.shortName() + " '" + name + "' in " + client));
  }

  @Test
  void eachClientIsReportedWithWhatItWasSentAndWhatItSaid() {
    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> {
              ClientStatusResponse response = fetch(ClientStatusRequest.getDefaultInstance());
              assertThat(nodeIds(response)).containsExactly("acking-1", "delta-1", "nacking-1");

              ClientConfig acker = response.getConfigList().get(0);
              assertThat(acker.getNode()).isEqualTo(node("acking-1", "fleet"));
              assertThat(acker.getGenericXdsConfigsList())
                  .extracting(GenericXdsConfig::getName)
                  .containsExactly("a", "b");
              for (GenericXdsConfig cluster : acker.getGenericXdsConfigsList()) {
                assertThat(cluster.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
                assertThat(cluster.getVersionInfo()).isEqualTo(ackedClusters.getVersionInfo());
                assertThat(cluster.getClientStatus()).isEqualTo(ClientResourceStatus.ACKED);
                assertThat(cluster.getConfigStatus()).isEqualTo(ConfigStatus.SYNCED);
                assertThat(cluster.hasLastUpdated()).isTrue();
                assertThat(cluster.hasErrorState()).isFalse();
              }
              assertThat(entry(response, "acking-1", TypeUrl.CLUSTER, "a").getXdsConfig())
                  .isEqualTo(CLUSTER_A);
              assertThat(entry(response, "acking-1", TypeUrl.CLUSTER, "b").getXdsConfig())
                  .isEqualTo(CLUSTER_B);

              GenericXdsConfig rejected = entry(response, "nacking-1", TypeUrl.CLUSTER, "b");
              assertThat(rejected.getClientStatus()).isEqualTo(ClientResourceStatus.NACKED);
              assertThat(rejected.getConfigStatus()).isEqualTo(ConfigStatus.ERROR);
              assertThat(rejected.getVersionInfo()).isEqualTo(nackedClusters.getVersionInfo());
              assertThat(rejected.getXdsConfig()).isEqualTo(CLUSTER_B);
              assertThat(rejected.getErrorState().getDetails())
                  .isEqualTo("cluster b: unknown load balancing policy");
              assertThat(rejected.getErrorState().getVersionInfo())
                  .isEqualTo(nackedClusters.getVersionInfo());
              assertThat(rejected.getErrorState().hasLastUpdateAttempt()).isTrue();

              GenericXdsConfig accepted = entry(response, "delta-1", TypeUrl.CLUSTER, "a");
              assertThat(accepted.getClientStatus()).isEqualTo(ClientResourceStatus.ACKED);
              assertThat(accepted.getConfigStatus()).isEqualTo(ConfigStatus.SYNCED);
              assertThat(accepted.getVersionInfo())
                  .isEqualTo(deltaClusters.getResources(0).getVersion());
              assertThat(accepted.getXdsConfig()).isEqualTo(CLUSTER_A);
              GenericXdsConfig missing = entry(response, "delta-1", TypeUrl.CLUSTER, "missing");
              assertThat(missing.getClientStatus()).isEqualTo(ClientResourceStatus.DOES_NOT_EXIST);
              assertThat(missing.hasXdsConfig()).isFalse();
              GenericXdsConfig endpoints = entry(response, "delta-1", TypeUrl.ENDPOINT, "a");
              assertThat(endpoints.getClientStatus()).isEqualTo(ClientResourceStatus.REQUESTED);
              assertThat(endpoints.getConfigStatus()).isEqualTo(ConfigStatus.NOT_SENT);
              assertThat(endpoints.hasXdsConfig()).isFalse();
              assertThat(response.getConfig(1).getGenericXdsConfigsList()).hasSize(3);
            });
  }

  @Test
  void aResourceSentAndNotYetAnsweredIsStale() throws Exception {
    upstream.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo("u2")
            .setNonce("u2")
            .addResources(CLUSTER_A)
            .addResources(Any.pack(Resources.cluster("c")))
            .build());
    DiscoveryResponse update = acking.next(WAIT);
    if (update.getResourcesCount() == 3) {
      // Make-before-break: c is added while b is kept, and b is removed in the next response.
      update = acking.next(WAIT);
    }
    assertThat(update.getResourcesCount()).as(acking.transcript()).isEqualTo(2);
    DiscoveryResponse latest = update;

    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> {
              GenericXdsConfig added =
                  entry(
                      fetch(ClientStatusRequest.getDefaultInstance()),
                      "acking-1",
                      TypeUrl.CLUSTER,
                      "c");
              assertThat(added.getConfigStatus()).isEqualTo(ConfigStatus.STALE);
              assertThat(added.getClientStatus()).isEqualTo(ClientResourceStatus.REQUESTED);
              assertThat(added.getVersionInfo()).isEqualTo(latest.getVersionInfo());
            });
    acking.send(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo(latest.getVersionInfo())
            .setResponseNonce(latest.getNonce())
            .build());
    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> {
              ClientStatusResponse response = fetch(ClientStatusRequest.getDefaultInstance());
              assertThat(response.getConfig(0).getGenericXdsConfigsList())
                  .extracting(GenericXdsConfig::getName)
                  .containsExactly("a", "c");
              GenericXdsConfig added = entry(response, "acking-1", TypeUrl.CLUSTER, "c");
              assertThat(added.getConfigStatus()).isEqualTo(ConfigStatus.SYNCED);
              assertThat(added.getClientStatus()).isEqualTo(ClientResourceStatus.ACKED);
            });
  }

  @Test
  void nodeIdMatchersChooseTheClients() {
    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> assertThat(nodeIds(fetch(ClientStatusRequest.getDefaultInstance()))).hasSize(3));

    assertThat(nodeIds(fetch(matching(StringMatcher.newBuilder().setExact("nacking-1").build()))))
        .containsExactly("nacking-1");
    assertThat(
            nodeIds(
                fetch(
                    matching(
                        StringMatcher.newBuilder().setPrefix("ACK").setIgnoreCase(true).build()))))
        .containsExactly("acking-1");
    assertThat(nodeIds(fetch(matching(StringMatcher.newBuilder().setSuffix("cking-1").build()))))
        .containsExactly("acking-1", "nacking-1");
    assertThat(nodeIds(fetch(matching(StringMatcher.newBuilder().setContains("elt").build()))))
        .containsExactly("delta-1");
    assertThat(
            nodeIds(
                fetch(
                    matching(
                        StringMatcher.newBuilder()
                            .setSafeRegex(RegexMatcher.newBuilder().setRegex("[dn].*-1"))
                            .build()))))
        .containsExactly("delta-1", "nacking-1");
    assertThat(nodeIds(fetch(matching(StringMatcher.newBuilder().setExact("nobody").build()))))
        .isEmpty();
    // Matchers are ORed.
    assertThat(
            nodeIds(
                fetch(
                    ClientStatusRequest.newBuilder()
                        .addNodeMatchers(
                            NodeMatcher.newBuilder()
                                .setNodeId(StringMatcher.newBuilder().setExact("acking-1")))
                        .addNodeMatchers(
                            NodeMatcher.newBuilder()
                                .setNodeId(StringMatcher.newBuilder().setExact("delta-1")))
                        .build())))
        .containsExactly("acking-1", "delta-1");
  }

  @Test
  void resourceContentsCanBeLeftOut() {
    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> {
              ClientStatusResponse response =
                  fetch(ClientStatusRequest.newBuilder().setExcludeResourceContents(true).build());
              GenericXdsConfig cluster = entry(response, "acking-1", TypeUrl.CLUSTER, "a");
              assertThat(cluster.getClientStatus()).isEqualTo(ClientResourceStatus.ACKED);
              assertThat(cluster.hasXdsConfig()).isFalse();
            });
  }

  @Test
  void aStreamAnswersEachRequest() throws Exception {
    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> assertThat(nodeIds(fetch(ClientStatusRequest.getDefaultInstance()))).hasSize(3));
    BlockingQueue<ClientStatusResponse> responses = new LinkedBlockingQueue<>();
    CompletableFuture<io.grpc.Status> end = new CompletableFuture<>();
    StreamObserver<ClientStatusRequest> requests = stream(responses, end);

    requests.onNext(matching(StringMatcher.newBuilder().setExact("acking-1").build()));
    ClientStatusResponse first = responses.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    assertThat(first).as("a response to the first request").isNotNull();
    assertThat(nodeIds(first)).containsExactly("acking-1");

    requests.onNext(matching(StringMatcher.newBuilder().setPrefix("delta").build()));
    ClientStatusResponse second = responses.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    assertThat(second).as("a response to the second request").isNotNull();
    assertThat(nodeIds(second)).containsExactly("delta-1");
    assertThat(entry(second, "delta-1", TypeUrl.CLUSTER, "missing").getClientStatus())
        .isEqualTo(ClientResourceStatus.DOES_NOT_EXIST);

    requests.onCompleted();
    assertThat(end.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isEqualTo(io.grpc.Status.OK);
    assertThat(responses).isEmpty();
  }

  @Test
  void anUnsupportedMatcherIsRefusedWithInvalidArgument() throws Exception {
    ClientStatusRequest byMetadata =
        ClientStatusRequest.newBuilder()
            .addNodeMatchers(
                NodeMatcher.newBuilder()
                    .addNodeMetadatas(
                        StructMatcher.newBuilder()
                            .addPath(StructMatcher.PathSegment.newBuilder().setKey("region"))
                            .setValue(
                                ValueMatcher.newBuilder()
                                    .setStringMatch(StringMatcher.newBuilder().setExact("eu")))))
            .build();
    assertThatThrownBy(() -> fetch(byMetadata))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
              assertThat(e.getStatus().getDescription()).contains("node_metadatas");
            });
    assertThatThrownBy(
            () ->
                fetch(
                    matching(
                        StringMatcher.newBuilder()
                            .setSafeRegex(RegexMatcher.newBuilder().setRegex("(unclosed"))
                            .build())))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
              assertThat(e.getStatus().getDescription()).contains("(unclosed");
            });

    CompletableFuture<io.grpc.Status> end = new CompletableFuture<>();
    StreamObserver<ClientStatusRequest> requests = stream(new LinkedBlockingQueue<>(), end);
    requests.onNext(byMetadata);
    io.grpc.Status status = end.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    assertThat(status.getCode()).isEqualTo(io.grpc.Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).contains("node_metadatas");
  }

  @Test
  void aClosedStreamIsNoLongerReported() {
    try (var leaving = XdsTestClient.sotwAds(proxy.xdsPort())) {
      leaving.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("leaving-1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      leaving.next(WAIT);
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(nodeIds(fetch(ClientStatusRequest.getDefaultInstance())))
                      .containsExactly("acking-1", "delta-1", "leaving-1", "nacking-1"));
    }
    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(nodeIds(fetch(ClientStatusRequest.getDefaultInstance())))
                    .containsExactly("acking-1", "delta-1", "nacking-1"));
  }
}
