package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * DESIGN invariant 8: a client that stops reading costs the proxy at most the responses its
 * transport already took plus one pending state per type, never a backlog of updates, and does not
 * hold back the other clients of its group. When it reads again it gets the newest state.
 */
class BackpressureTest {

  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final int UPDATES = 60;

  /** Clusters per update, each with a large description, so that a response is about 200 KB. */
  private static final int CLUSTERS = 100;

  private static final String PADDING = "x".repeat(2000);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  /** The upstream's state {@code version}: every cluster says which version it belongs to. */
  private static DiscoveryResponse state(int version) {
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo(Integer.toString(version))
            .setNonce("u" + version);
    for (int i = 0; i < CLUSTERS; i++) {
      response.addResources(
          Any.pack(
              Cluster.newBuilder()
                  .setName("c" + i)
                  .setAltStatName(version + "-" + PADDING)
                  .build()));
    }
    return response.build();
  }

  private static int versionOf(DiscoveryResponse response) throws Exception {
    String stat = response.getResources(0).unpack(Cluster.class).getAltStatName();
    return Integer.parseInt(stat.substring(0, stat.indexOf('-')));
  }

  @Test
  void aClientThatStopsReadingGetsTheNewestStateLaterAndDoesNotHoldBackTheOthers()
      throws Exception {
    ScriptedControlPlane upstream = fixture.scriptedControlPlane();
    XdsProxy proxy = fixture.proxy(against(upstream.target()));
    var fast = fixture.sotwAds();
    StalledClient slow = fixture.add(new StalledClient(proxy.xdsPort()));
    fast.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("fast", "fleet"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    upstream.nextRequest(WAIT);
    upstream.send(state(0));
    assertThat(versionOf(fast.next(WAIT))).isZero();
    slow.subscribe();
    assertThat(versionOf(slow.next(WAIT))).as("the stalled client's first response").isZero();

    for (int version = 1; version <= UPDATES; version++) {
      upstream.send(state(version));
    }

    // The client that reads gets to the newest state while the other one reads nothing.
    int seen = 0;
    while (seen < UPDATES) {
      seen = versionOf(fast.next(WAIT));
    }
    // The stalled client reads again: what its transport held, then the newest state, not a
    // backlog.
    int responses = 0;
    int last = 0;
    while (last < UPDATES) {
      slow.readMore();
      last = versionOf(slow.next(WAIT));
      responses++;
    }
    assertThat(responses)
        .as(
            "responses the stalled client got for %d updates: what HTTP/2 flow control let through, and the newest",
            UPDATES)
        .isLessThan(UPDATES / 3);
  }

  /**
   * A client that reads one response at a time, only when told to: the rest waits in flow control.
   */
  private static final class StalledClient implements AutoCloseable {
    private final ManagedChannel channel;
    private final ClientCall<DiscoveryRequest, DiscoveryResponse> call;
    private final BlockingQueue<DiscoveryResponse> responses = new LinkedBlockingQueue<>();

    StalledClient(int port) {
      channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
      call =
          channel.newCall(
              AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod(),
              CallOptions.DEFAULT);
      call.start(
          new ClientCall.Listener<>() {
            @Override
            public void onMessage(DiscoveryResponse message) {
              responses.add(message);
            }

            @Override
            public void onClose(Status status, Metadata trailers) {}
          },
          new Metadata());
    }

    void subscribe() {
      call.sendMessage(
          DiscoveryRequest.newBuilder()
              .setNode(node("slow", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      call.request(1);
    }

    void readMore() {
      call.request(1);
    }

    DiscoveryResponse next(Duration timeout) throws InterruptedException {
      DiscoveryResponse response = responses.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(response).as("a response within %s", timeout).isNotNull();
      return response;
    }

    @Override
    public void close() {
      call.cancel("test over", null);
      channel.shutdownNow();
    }
  }
}
