package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.serving;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.Status;
import io.xdsproxy.app.testing.Backend;
import io.xdsproxy.app.testing.ExampleResources;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.XdsClientChannel;
import io.xdsproxy.core.TypeUrl;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The maximum connection age: a connection older than it gets GOAWAY, its streams get {@link
 * XdsTransport#CONNECTION_AGE_GRACE} to move, and a client reconnects (behind a load balancer,
 * maybe to another replica) and goes on being served.
 */
class ConnectionAgeTest {

  private static final Duration AGE = Duration.ofSeconds(1);

  /** Age with gRPC's +10 % jitter, the grace, and room for a slow machine. */
  private static final Duration AGED_OUT =
      AGE.plus(XdsTransport.CONNECTION_AGE_GRACE).plusSeconds(10);

  private static final Duration WAIT = Duration.ofSeconds(15);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @TempDir Path resources;

  @Test
  void aStreamOnAnAgedConnectionIsEndedSoItsClientReconnects() throws Exception {
    fixture.proxy(serving(ExampleResources.DIRECTORY).withMaxConnectionAge(AGE));
    var client = fixture.sotwAds();
    client.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("n1", "example"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    assertThat(client.next(WAIT).getResourcesCount()).isPositive();

    Status end = client.awaitEnd(AGED_OUT);

    assertThat(end.getCode())
        .as("how the aged stream ended: %s", end)
        .isEqualTo(Status.Code.UNAVAILABLE);
  }

  @Test
  void aGrpcXdsClientMovesToANewConnectionAndKeepsGettingUpdates() throws Exception {
    Backend first = fixture.add(new Backend("first"));
    Backend second = fixture.add(new Backend("second"));
    ExampleResources.copyPointingAt(resources, first.port());
    XdsProxy proxy = fixture.proxy(serving(resources).withMaxConnectionAge(AGE));
    XdsClientChannel client = fixture.grpcClient("client-1", "local", "example-service");
    await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "first"::equals);
    String firstPeer =
        await().atMost(WAIT).until(() -> peerOf(proxy, "client-1"), Optional::isPresent).get();

    await()
        .atMost(AGED_OUT)
        .until(() -> peerOf(proxy, "client-1").filter(peer -> !peer.equals(firstPeer)).isPresent());
    ExampleResources.copyPointingAt(resources, second.port());

    await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "second"::equals);
  }

  /** The address the proxy sees {@code nodeId}'s stream come from, from {@code GET /clients}. */
  private static Optional<String> peerOf(XdsProxy proxy, String nodeId) throws Exception {
    return ProxyFixture.clients(proxy).asList().stream()
        .map(client -> client.getAsJsonObject())
        .filter(client -> client.get("nodeId").getAsString().equals(nodeId))
        .map(client -> client.get("peer").getAsString())
        .findFirst();
  }

  @Test
  void serverKeepaliveIsLeftOutOnlyWhenEveryConnectionEndsBeforeItsFirstPing() {
    assertThat(XdsTransport.endsBeforeKeepalive(Duration.ofMinutes(30))).isTrue();
    assertThat(XdsTransport.endsBeforeKeepalive(Duration.ofMinutes(108))).isTrue();
    // 109 minutes, spread by gRPC's +10 % and given the grace, can pass the two hours of the first
    // ping.
    assertThat(XdsTransport.endsBeforeKeepalive(Duration.ofMinutes(109))).isFalse();
    assertThat(XdsTransport.endsBeforeKeepalive(Duration.ofDays(365 * 1000))).isFalse();
  }
}
