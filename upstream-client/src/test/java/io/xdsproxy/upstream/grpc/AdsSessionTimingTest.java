package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.testing.FakeClock;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The timed rules of an upstream session, on a fake clock against a scripted control plane on
 * loopback: the not-found timeout and the reconnect backoff, to the millisecond, without waiting.
 * The session's executor runs on whichever thread hands it work, so a timer task the test fires
 * runs before {@link FakeClock#forwardTime} returns.
 */
class AdsSessionTimingTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration NOT_FOUND = Duration.ofSeconds(15);
  private static final Backoff BACKOFF =
      new Backoff(Duration.ofMillis(100), Duration.ofMillis(800), 2.0, 0.2);
  private static final Executor CALLING_THREAD = Runnable::run;

  /** Whom the group was opened by: the tenant its streams start as. */
  private static final String TENANT = "address 192.0.2.1";

  private static final Node NODE = Node.newBuilder().setId("envoy-1").setCluster("fleet").build();

  /**
   * No jitter: {@code nextDouble} in the middle of [0, 1) spreads a delay by a factor of 1. Also
   * for the other tests of timed upstream rules.
   */
  static final RandomGenerator MIDDLE =
      new RandomGenerator() {
        @Override
        public long nextLong() {
          return 0;
        }

        @Override
        public double nextDouble() {
          return 0.5;
        }
      };

  private final FakeClock time = new FakeClock();
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final List<ResourceUpdate> updates = new CopyOnWriteArrayList<>();
  private ScriptedControlPlane controlPlane;
  private ManagedChannel channel;
  private SotwUpstreamSession session;

  @BeforeEach
  void start() throws Exception {
    controlPlane = new ScriptedControlPlane();
    channel = NettyChannelBuilder.forTarget(controlPlane.target()).usePlaintext().build();
    SessionContext context =
        new SessionContext(
            List.of(channel),
            List.of(controlPlane.target()),
            CALLING_THREAD,
            time.scheduler(),
            BACKOFF,
            NOT_FOUND,
            MIDDLE,
            meters,
            new StreamStarts(0, time.ticker(), CALLING_THREAD, time.scheduler(), meters));
    session =
        new SotwUpstreamSession(new NodeGroupKey("fleet"), NODE, TENANT, updates::add, context);
  }

  @AfterEach
  void stop() {
    session.close();
    channel.shutdownNow();
    controlPlane.close();
  }

  private List<ResourceUpdate> updatesOf(TypeUrl type) {
    return updates.stream().filter(update -> update.type().equals(type)).toList();
  }

  @Test
  void aNameUnansweredForTheNotFoundTimeoutIsPublishedAbsentNotBefore() throws Exception {
    session.updateInterest(TypeUrl.ROUTE, new Interest(false, Set.of("missing")));
    controlPlane.nextRequest(WAIT);

    time.forwardTime(NOT_FOUND.minusMillis(1));
    assertThat(updatesOf(TypeUrl.ROUTE)).as("a millisecond before the timeout").isEmpty();

    time.forwardTime(Duration.ofMillis(1));
    await().atMost(WAIT).until(() -> !updatesOf(TypeUrl.ROUTE).isEmpty());
    assertThat(updatesOf(TypeUrl.ROUTE)).hasSize(1);
    assertThat(updatesOf(TypeUrl.ROUTE).get(0).removed()).containsExactly("missing");
  }

  @Test
  void aNameAnsweredWithinTheNotFoundTimeoutIsNotPublishedAbsent() throws Exception {
    session.updateInterest(TypeUrl.ROUTE, new Interest(false, Set.of("present")));
    controlPlane.nextRequest(WAIT);
    time.forwardTime(NOT_FOUND.minusSeconds(1));

    controlPlane.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.ROUTE.url())
            .setVersionInfo("1")
            .setNonce("n1")
            .addResources(Any.pack(RouteConfiguration.newBuilder().setName("present").build()))
            .build());
    await().atMost(WAIT).until(() -> !updatesOf(TypeUrl.ROUTE).isEmpty());
    controlPlane.nextRequest(WAIT); // the ACK: the response has been applied

    assertThat(time.forwardTime(NOT_FOUND)).as("the timer fires").isEqualTo(1);
    assertThat(updatesOf(TypeUrl.ROUTE)).hasSize(1);
    assertThat(updatesOf(TypeUrl.ROUTE).get(0).removed()).isEmpty();
  }

  @Test
  void reconnectsWaitTwiceAsLongEachTimeUpToTheMaximumAndAfreshAfterAGoodStream() throws Exception {
    session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));
    controlPlane.nextRequest(WAIT);

    for (long expected : new long[] {100, 200, 400, 800, 800}) {
      assertThat(failAndReconnect()).isEqualTo(Duration.ofMillis(expected));
    }

    controlPlane.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo("1")
            .setNonce("n1")
            .addResources(Any.pack(Cluster.newBuilder().setName("a").build()))
            .build());
    controlPlane.nextRequest(WAIT); // the ACK: the stream works

    assertThat(failAndReconnect()).as("after a good stream").isEqualTo(Duration.ofMillis(100));
    assertThat(failAndReconnect()).isEqualTo(Duration.ofMillis(200));
  }

  /**
   * Ends the current stream, and moves time on to the reconnect it schedules; returns how long the
   * session waited, after checking that it did not reconnect a millisecond sooner.
   */
  private Duration failAndReconnect() throws Exception {
    int streams = controlPlane.streamsOpened();
    controlPlane.endStream(Status.UNAVAILABLE.withDescription("restarting"));
    await().atMost(WAIT).until(() -> time.pendingTasks() == 1);
    Duration delay = time.pendingDelays().get(0);

    time.forwardTime(delay.minusMillis(1));
    assertThat(controlPlane.streamsOpened()).as("before the backoff").isEqualTo(streams);
    time.forwardTime(Duration.ofMillis(1));
    controlPlane.nextRequest(WAIT); // the new stream's first request
    assertThat(controlPlane.streamsOpened()).isEqualTo(streams + 1);
    return delay;
  }
}
