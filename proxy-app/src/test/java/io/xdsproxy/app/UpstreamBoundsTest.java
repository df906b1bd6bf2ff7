package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.xdsproxy.app.testing.LoopbackChannels;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Issue 29 item 4, played against the real proxy on loopback fed by java-control-plane, whose gRPC
 * server keeps the default 4 MiB limit on a request: one member cannot make its group's upstream
 * request larger than that (which sent the group's session into a reconnect loop, every member
 * without updates), and one address's flood of new groups does not hold back another address's
 * first state in the upstream start queue (DESIGN invariant 12).
 */
class UpstreamBoundsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot("fleet", routeTo("a", "1"));
  }

  /** Group fleet's state at {@code version}: clusters a and b, and route r1 to {@code cluster}. */
  private static Snapshot routeTo(String cluster, String version) {
    return Snapshot.create(
        List.of(Resources.cluster("a"), Resources.cluster("b")),
        List.of(),
        List.of(),
        List.of(Resources.route("r1", cluster)),
        List.of(),
        version);
  }

  /** The cluster route r1 of {@code response} sends to. */
  private static String clusterOf(DiscoveryResponse response) throws Exception {
    return response
        .getResources(0)
        .unpack(RouteConfiguration.class)
        .getVirtualHosts(0)
        .getRoutes(0)
        .getRoute()
        .getCluster();
  }

  /** {@code count} route names of 2,000 characters, {@code prefix} first. */
  private static List<String> longNames(String prefix, int count) {
    return IntStream.range(0, count)
        .mapToObj(i -> String.format("%s%05d", prefix, i))
        .map(name -> name + "x".repeat(2000 - name.length()))
        .toList();
  }

  /**
   * A member asks for 4.2 MB of route names in three Delta requests of 1.4 MB (each under the
   * proxy's 4 MiB request limit). Before the bound, the group's SotW request upstream grew past the
   * control plane's 4 MiB and its stream was ended and reopened in a loop; a Delta session's
   * subscriptions passed one by one, and its first request after a control-plane restart, carrying
   * them all, looped the same. Now the member is refused at its first 1.4 MB, the group asks none
   * of it upstream, and across a control-plane restart the group's one session follows the next
   * version to the other member.
   */
  @ParameterizedTest
  @EnumSource(AdsUpstream.Protocol.class)
  void aMemberAskingForMoreRouteNamesThanTheBoundIsRefusedAndItsGroupGoesOn(
      AdsUpstream.Protocol upstream) throws Exception {
    XdsProxy proxy = fixture.proxy(against(controlPlane.target()).withUpstreamProtocol(upstream));
    var bystander = fixture.add(XdsTestClient.sotwAds(proxy.xdsPort()));
    bystander.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("bystander", "fleet"))
            .setTypeUrl(TypeUrl.ROUTE.url())
            .addResourceNames("r1")
            .build());
    DiscoveryResponse first = bystander.next(WAIT);
    assertThat(clusterOf(first)).isEqualTo("a");
    bystander.send(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.ROUTE.url())
            .setVersionInfo(first.getVersionInfo())
            .setResponseNonce(first.getNonce())
            .addResourceNames("r1")
            .build());

    var greedy = fixture.add(XdsTestClient.deltaAds(proxy.xdsPort()));
    for (int chunk = 0; chunk < 3 && !greedy.ended(); chunk++) {
      DeltaDiscoveryRequest.Builder request =
          DeltaDiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.ROUTE.url())
              .addAllResourceNamesSubscribe(longNames("chunk" + chunk + "-", 700));
      if (chunk == 0) {
        request.setNode(node("greedy", "fleet"));
      }
      greedy.send(request.build());
      greedy.nextUnlessEnded(Duration.ofMillis(500)); // the proxy has read it, or ended the stream
    }

    Status status = greedy.awaitEnd(WAIT);
    assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription())
        .contains(
            "node group fleet",
            "RouteConfiguration names",
            "more than the 1,048,576",
            "node 'greedy'",
            "--max-upstream-names-bytes-per-group");

    controlPlane.stop();
    controlPlane.start();
    controlPlane.setSnapshot("fleet", routeTo("b", "2"));
    DiscoveryResponse next = bystander.next(WAIT);
    assertThat(clusterOf(next)).as("the bystander follows the next version").isEqualTo("b");
    await()
        .during(Duration.ofSeconds(1))
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(controlPlane.streamGroups())
                    .as("the group's upstream streams: one before the restart, one after")
                    .hasSize(2));
    assertThat(fixture.scrape())
        .contains("xds_downstream_limited_total{limit=\"upstream_names_bytes\"} 1.0");
  }

  /** SotW ADS streams on one connection from {@code address}, a loopback address. */
  private ManagedChannel from(String address, int port) {
    return LoopbackChannels.from(fixture, address, port);
  }

  private XdsTestClient<DiscoveryRequest, DiscoveryResponse> stream(ManagedChannel channel) {
    return fixture.add(
        new XdsTestClient<>(
            channel, AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod()));
  }

  /**
   * At 2 upstream stream starts a second, 127.0.0.1 opens 30 groups: 28 wait, 14 s of turns.
   * 127.0.0.2's group, asked for after them, takes the turn after the flood's next, and its client
   * has its first state within a couple of seconds, the flood still waiting; first come first
   * served, it waited for all 28.
   */
  @Test
  void aFloodOfNewGroupsFromOneAddressDelaysAnotherAddressesFirstStateByATurn() throws Exception {
    controlPlane.setSnapshot("c", Resources.clustersAt(1, "1", "c-svc"));
    XdsProxy proxy =
        fixture.proxy(against(controlPlane.target()).withUpstreamMaxNewSessionsPerSecond(2));
    ManagedChannel flooding = from("127.0.0.1", proxy.xdsPort());
    List<XdsTestClient<DiscoveryRequest, DiscoveryResponse>> flood = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      var client = stream(flooding);
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("flood-" + i, "flood-" + i))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      flood.add(client);
    }
    await().atMost(WAIT).until(() -> waitingToStart() >= 20);

    var other = stream(from("127.0.0.2", proxy.xdsPort()));
    long asked = System.nanoTime();
    other.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("other", "c"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    assertThat(other.next(Duration.ofSeconds(3)).getResourcesCount())
        .as("the other address's first state, within 3 s")
        .isEqualTo(1);
    Duration waited = Duration.ofNanos(System.nanoTime() - asked);
    assertThat(waitingToStart())
        .as("the flood's starts still waiting when the other was served after %s", waited)
        .isGreaterThanOrEqualTo(10);
    assertThat(flood).allSatisfy(client -> assertThat(client.ended()).isFalse());
  }

  /** Upstream streams waiting for their turn to start, from the proxy's metrics. */
  private double waitingToStart() throws Exception {
    Matcher waiting = WAITING.matcher(fixture.scrape());
    return waiting.find() ? Double.parseDouble(waiting.group(1)) : 0;
  }

  private static final Pattern WAITING =
      Pattern.compile("(?m)^xds_upstream_sessions_waiting(?:\\{[^}]*})? (\\S+)$");
}
