package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.xds.Limits;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Hostile and broken clients against the limits (DESIGN invariant 7): each is told what it did
 * wrong with a gRPC status that names the limit, or is slowed down; the other clients go on.
 */
class LimitsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Limits TIGHT =
      new Limits(64 * 1024, 10, 100, 2, 3, 2, 5, 256 * 1024, 64 * 1024, 16, 1024);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    for (String group : List.of("fleet", "other")) {
      controlPlane.setSnapshot(
          group,
          Snapshot.create(
              List.of(Resources.cluster("a"), Resources.cluster("b")),
              List.of(Resources.endpoints("a", 8080), Resources.endpoints("b", 8081)),
              List.of(),
              List.of(),
              List.of(),
              "1"));
    }
    proxy = fixture.proxy(against(controlPlane.target()).withLimits(TIGHT));
  }

  /** A SotW ADS client of group {@code group} that asked for every cluster and got them. */
  private XdsTestClient<DiscoveryRequest, DiscoveryResponse> inSync(String id, String group) {
    XdsTestClient<DiscoveryRequest, DiscoveryResponse> client =
        XdsTestClient.sotwAds(proxy.xdsPort());
    client.send(
        DiscoveryRequest.newBuilder()
            .setNode(node(id, group))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    assertThat(client.next(WAIT).getResourcesCount()).isEqualTo(2);
    return client;
  }

  /** The client is still served: asking for endpoints, it gets them. */
  private static void stillServed(XdsTestClient<DiscoveryRequest, DiscoveryResponse> client) {
    client.send(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .addResourceNames("a")
            .build());
    assertThat(client.next(WAIT).getResourcesCount()).isEqualTo(1);
  }

  private static List<String> names(int count) {
    return IntStream.range(0, count).mapToObj(i -> "cluster-" + i).toList();
  }

  @Test
  void aSotwRequestForMoreNamesThanTheLimitEndsItsStreamWithResourceExhaustedAndOthersGoOn() {
    try (var bystander = inSync("bystander", "fleet");
        var greedy = XdsTestClient.sotwAds(proxy.xdsPort())) {
      greedy.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("greedy", "fleet"))
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addAllResourceNames(names(11))
              .build());

      Status status = greedy.awaitEnd(WAIT);

      assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(status.getDescription())
          .contains("11 resources", "10 allowed", "node 'greedy'", "--max-names-per-request");
      stillServed(bystander);
    }
  }

  @Test
  void aDeltaStreamThatSubscribesPastTheLimitRequestByRequestEndsWithResourceExhausted() {
    try (var greedy = XdsTestClient.deltaAds(proxy.xdsPort())) {
      greedy.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("greedy", "fleet"))
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addAllResourceNamesSubscribe(names(6))
              .build());
      greedy.send(
          DeltaDiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addAllResourceNamesSubscribe(names(12).subList(6, 12))
              .build());

      Status status = greedy.awaitEnd(WAIT);

      assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(status.getDescription())
          .contains("subscribed to 12", "10 allowed", "--max-names-per-request");
    }
  }

  @Test
  void aNameLongerThanTheLimitIsInvalidArgument() {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("long", "fleet"))
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addResourceNames("a")
              .addResourceNames("x".repeat(101))
              .build());

      Status status = client.awaitEnd(WAIT);

      assertThat(status.getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(status.getDescription())
          .contains("101 characters", "100 allowed", "--max-name-length");
    }
  }

  @Test
  void aRequestLargerThanTheLimitIsResourceExhaustedAndOthersGoOn() {
    try (var bystander = inSync("bystander", "fleet");
        var huge = XdsTestClient.sotwAds(proxy.xdsPort())) {
      Struct metadata =
          Struct.newBuilder()
              .putFields("blob", Value.newBuilder().setStringValue("x".repeat(100 * 1024)).build())
              .build();
      huge.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("huge", "fleet").toBuilder().setMetadata(metadata))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());

      assertThat(huge.awaitEnd(WAIT).getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      stillServed(bystander);
    }
  }

  @Test
  void streamsPastTheGroupsLimitAreRefusedUntilOneCloses() {
    var first = inSync("n1", "fleet");
    try (var second = inSync("n2", "fleet");
        var third = inSync("n3", "fleet")) {
      var fourth = XdsTestClient.sotwAds(proxy.xdsPort());
      fourth.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n4", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());

      Status status = fourth.awaitEnd(WAIT);

      assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(status.getDescription())
          .contains("node group fleet has 3 streams", "node 'n4'", "--max-streams-per-group");
      fourth.close();
      inSync("elsewhere", "other").close();
      first.close();
      await()
          .atMost(WAIT)
          .untilAsserted(
              () -> {
                try (var again = XdsTestClient.sotwAds(proxy.xdsPort())) {
                  again.send(
                      DiscoveryRequest.newBuilder()
                          .setNode(node("n4", "fleet"))
                          .setTypeUrl(TypeUrl.CLUSTER.url())
                          .build());
                  assertThat(again.next(WAIT).getResourcesCount()).isEqualTo(2);
                }
              });
    }
  }

  @Test
  void streamsPastTheNodesLimitAreRefusedAndOtherNodesAreNot() {
    try (var first = inSync("twin", "fleet");
        var second = inSync("twin", "fleet");
        var third = XdsTestClient.sotwAds(proxy.xdsPort())) {
      third.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("twin", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());

      Status status = third.awaitEnd(WAIT);

      assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
      assertThat(status.getDescription())
          .contains("node 'twin' has 2 streams", "--max-streams-per-node");
      stillServed(first);
      inSync("single", "other").close();
    }
  }

  @Test
  void aConnectionPastItsStreamLimitWaitsUntilOneOfItsStreamsCloses() throws Exception {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort()).usePlaintext().build();
    try {
      List<Recorder> streams = IntStream.range(0, 3).mapToObj(i -> new Recorder()).toList();
      List<StreamObserver<DiscoveryRequest>> requests = new CopyOnWriteArrayList<>();
      for (int i = 0; i < 3; i++) {
        StreamObserver<DiscoveryRequest> stream =
            AggregatedDiscoveryServiceGrpc.newStub(channel)
                .streamAggregatedResources(streams.get(i));
        stream.onNext(
            DiscoveryRequest.newBuilder()
                .setNode(node("n" + i, "fleet"))
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .build());
        requests.add(stream);
        if (i < 2) {
          Recorder opened = streams.get(i);
          await().atMost(WAIT).until(() -> !opened.responses.isEmpty());
        }
      }

      await()
          .during(Duration.ofMillis(700))
          .atMost(WAIT)
          .until(() -> streams.get(2).responses.isEmpty());
      requests.get(0).onCompleted();

      await().atMost(WAIT).until(() -> !streams.get(2).responses.isEmpty());
      assertThat(streams.get(2).responses.get(0).getResourcesCount()).isEqualTo(2);
    } finally {
      channel.shutdownNow();
    }
  }

  @Test
  void aClientThatFloodsRequestsIsReadAtTheRateAndTheOthersAreNot() throws Exception {
    try (var bystander = inSync("bystander", "fleet");
        var flood = XdsTestClient.sotwAds(proxy.xdsPort())) {
      DiscoveryRequest ask =
          DiscoveryRequest.newBuilder()
              .setNode(node("flood", "fleet"))
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addResourceNames("a")
              .build();
      double before = requestsRead();
      long sent = System.nanoTime();
      for (int i = 0; i < 40; i++) {
        flood.send(ask);
      }
      // 5 a second, 10 at once (and the first): however fast the client sends, no more are read.
      await()
          .during(Duration.ofSeconds(1))
          .atMost(WAIT)
          .untilAsserted(
              () -> {
                double seconds = (System.nanoTime() - sent) / 1e9;
                assertThat(requestsRead() - before)
                    .as("requests read after %.1f s", seconds)
                    .isLessThanOrEqualTo(1 + 10 + 5 * seconds);
              });
      stillServed(bystander);

      await()
          .atMost(Duration.ofSeconds(15))
          .untilAsserted(
              () ->
                  assertThat(requestsRead() - before)
                      .as("every request is read in the end")
                      .isGreaterThanOrEqualTo(40 + 1));
      assertThat(fixture.scrape())
          .contains("xds_downstream_limited_total{limit=\"request_rate\"} 1.0");
    }
  }

  /** Requests of the proxy's streams read so far, of every type, from its metrics. */
  private double requestsRead() throws Exception {
    Matcher counts = REQUESTS.matcher(fixture.scrape());
    double total = 0;
    while (counts.find()) {
      total += Double.parseDouble(counts.group(1));
    }
    return total;
  }

  private static final Pattern REQUESTS =
      Pattern.compile("(?m)^xds_downstream_requests_total\\{[^}]*} (\\S+)$");

  /** Records the responses of one raw stream. */
  private static final class Recorder implements StreamObserver<DiscoveryResponse> {
    final List<DiscoveryResponse> responses = new CopyOnWriteArrayList<>();

    @Override
    public void onNext(DiscoveryResponse response) {
      responses.add(response);
    }

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onCompleted() {}
  }
}
