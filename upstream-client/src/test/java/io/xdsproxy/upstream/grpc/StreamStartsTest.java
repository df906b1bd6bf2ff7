package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource.UpstreamSession;
import io.xdsproxy.core.testing.FakeClock;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.random.RandomGenerator;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code --upstream-max-new-sessions-per-second}: the streams of many node groups reach the control
 * plane at the rate, first asked first started within one tenant and in turn across tenants, on a
 * fake clock; a session closed while it waits never starts, and a reconnect waits its turn as a new
 * session does.
 */
class StreamStartsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Executor CALLING_THREAD = Runnable::run;
  private static final Backoff BACKOFF =
      new Backoff(Duration.ofMillis(100), Duration.ofMillis(800), 2.0, 0.2);

  private static final RandomGenerator MIDDLE = AdsSessionTimingTest.MIDDLE;

  private final FakeClock time = new FakeClock();
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void stop() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  private <T extends AutoCloseable> T add(T closeable) {
    opened.add(closeable);
    return closeable;
  }

  private double waiting() {
    return meters.get("xds.upstream.sessions.waiting").gauge().value();
  }

  /** The node groups whose streams reached {@code controlPlane}, in the order their first came. */
  private static Set<String> started(ControlPlane controlPlane) {
    Set<String> groups = new LinkedHashSet<>();
    for (DiscoveryRequest request : controlPlane.requests()) {
      if (request.hasNode()) {
        groups.add(request.getNode().getCluster());
      }
    }
    return groups;
  }

  private static String group(int i) {
    return String.format("g%02d", i);
  }

  @Test
  void twentyGroupsStartAtFiveASecondFirstComeFirstServedAndAWithdrawnOneNever() throws Exception {
    ControlPlane controlPlane = add(new ControlPlane());
    StreamStarts starts =
        new StreamStarts(5, time.ticker(), CALLING_THREAD, time.scheduler(), meters);
    AdsUpstream upstream =
        add(
            new AdsUpstream(
                AdsUpstream.Settings.plaintext(
                    List.of(controlPlane.target()),
                    AdsUpstream.Protocol.SOTW,
                    BACKOFF,
                    Duration.ofSeconds(15)),
                CALLING_THREAD,
                time.scheduler(),
                meters,
                starts));
    List<UpstreamSession> sessions = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      Node node = Node.newBuilder().setId("envoy-" + i).setCluster(group(i)).build();
      UpstreamSession session =
          upstream.open(new NodeGroupKey(group(i)), node, "address 192.0.2.1", update -> {});
      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));
      sessions.add(session);
    }
    sessions.get(7).close(); // closed while it waits: it leaves the queue, taking no token

    // A second's worth at once: the first five.
    Set<String> expected = new LinkedHashSet<>();
    IntStream.range(0, 5).mapToObj(StreamStartsTest::group).forEach(expected::add);
    await().atMost(WAIT).until(() -> started(controlPlane).size() == 5);
    assertThat(started(controlPlane)).containsExactlyInAnyOrderElementsOf(expected);
    assertThat(waiting()).as("waiting after the first second's worth").isEqualTo(14);

    // Then one every 200 ms, in the order asked, g07 passed over.
    for (int i = 5; i < 20; i++) {
      if (i == 7) {
        continue;
      }
      time.forwardTime(Duration.ofMillis(199));
      assertThat(started(controlPlane))
          .as("1 ms before %s's turn", group(i))
          .hasSize(expected.size());
      time.forwardTime(Duration.ofMillis(1));
      String turn = group(i);
      expected.add(turn);
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(started(controlPlane))
                      .as("started by %s's turn", turn)
                      .containsExactlyInAnyOrderElementsOf(expected));
    }
    assertThat(waiting()).isZero();

    time.forwardTime(Duration.ofSeconds(10));
    assertThat(started(controlPlane))
        .as("the withdrawn session never starts")
        .doesNotContain("g07");
    assertThat(controlPlane.openStreams()).isEqualTo(19);
    assertThat(meters.get("xds.upstream.session.start.wait").timer().count()).isEqualTo(19);
    assertThat(
            meters
                .get("xds.upstream.session.start.wait")
                .timer()
                .max(java.util.concurrent.TimeUnit.MILLISECONDS))
        .as("the last one waited its 14 turns")
        .isEqualTo(14 * 200);
  }

  /**
   * Tenant 192.0.2.1 floods the queue with ten starts (new groups, or its groups reconnecting after
   * a control-plane restart: to the queue they are alike); 192.0.2.2's one start, asked after all
   * ten, waits one turn of the flood's, not nine, and 192.0.2.3's start after its withdrawn one
   * takes the next turn without the withdrawn one taking a token.
   */
  @Test
  void aTenantsFloodDelaysAnotherTenantsStartByOneTurnNotByTheFloodsLength() {
    StreamStarts starts =
        new StreamStarts(1, time.ticker(), CALLING_THREAD, time.scheduler(), meters);
    List<String> started = new java.util.concurrent.CopyOnWriteArrayList<>();
    for (int i = 0; i < 10; i++) {
      String flood = "flood-" + i;
      starts.start("address 192.0.2.1", () -> started.add(flood));
    }
    starts.start("address 192.0.2.2", () -> started.add("other"));
    StreamStarts.Waiting withdrawn =
        starts.start("address 192.0.2.3", () -> started.add("withdrawn"));
    starts.start("address 192.0.2.3", () -> started.add("third"));
    withdrawn.withdraw();
    assertThat(started).as("a second's worth at once").containsExactly("flood-0");
    assertThat(waiting()).isEqualTo(11);

    List<String> expected = new ArrayList<>(List.of("flood-0"));
    List<String> turns = new ArrayList<>(List.of("flood-1", "other", "third"));
    for (int i = 2; i < 10; i++) {
      turns.add("flood-" + i);
    }
    for (String turn : turns) {
      time.forwardTime(Duration.ofMillis(999));
      assertThat(started).as("1 ms before %s's turn", turn).containsExactlyElementsOf(expected);
      time.forwardTime(Duration.ofMillis(1));
      expected.add(turn);
      assertThat(started).as("at %s's turn", turn).containsExactlyElementsOf(expected);
    }
    assertThat(waiting()).isZero();
    time.forwardTime(Duration.ofSeconds(10));
    assertThat(started).as("the withdrawn start never runs").doesNotContain("withdrawn");
  }

  /** A SotW session to {@code controlPlane} whose streams start at one a second. */
  private SotwUpstreamSession oneStartASecond(ScriptedControlPlane controlPlane) {
    ManagedChannel channel =
        NettyChannelBuilder.forTarget(controlPlane.target()).usePlaintext().build();
    add(channel::shutdownNow);
    SessionContext context =
        new SessionContext(
            List.of(channel),
            List.of(controlPlane.target()),
            CALLING_THREAD,
            time.scheduler(),
            BACKOFF,
            Duration.ofSeconds(15),
            MIDDLE,
            meters,
            new StreamStarts(1, time.ticker(), CALLING_THREAD, time.scheduler(), meters));
    SotwUpstreamSession session =
        new SotwUpstreamSession(
            new NodeGroupKey("fleet"),
            Node.newBuilder().setId("envoy-1").setCluster("fleet").build(),
            "address 192.0.2.1",
            update -> {},
            context);
    add(session::close);
    return session;
  }

  /**
   * A stream abandoned for a new one (a wildcard asked for after names) is cancelled by the proxy:
   * its end is no failure. Counted as one, it was backed off and reconnected, and the backoff's
   * reconnect, coming after the new stream had started, opened a third.
   */
  @Test
  void aStreamAbandonedForANewOneEndsWithoutAReconnectOfItsOwn() throws Exception {
    ScriptedControlPlane controlPlane = add(new ScriptedControlPlane());
    SotwUpstreamSession session = oneStartASecond(controlPlane);
    session.updateInterest(TypeUrl.CLUSTER, new Interest(false, Set.of("a")));
    assertThat(controlPlane.nextRequest(WAIT).getResourceNamesList()).containsExactly("a");

    session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of("a")));
    await().atMost(WAIT).until(() -> controlPlane.streamsCancelled() == 1);
    assertThat(waiting()).as("the new stream waits for its turn").isEqualTo(1);
    time.forwardTime(Duration.ofSeconds(1));
    assertThat(controlPlane.nextRequest(WAIT).getResourceNamesList())
        .as("a new stream's first request, the legacy wildcard")
        .isEmpty();

    time.forwardTime(Duration.ofSeconds(5));
    controlPlane.expectNoRequest(Duration.ofMillis(200));
    assertThat(controlPlane.streamsOpened()).isEqualTo(2);
    assertThat(meters.get("xds.upstream.reconnects").counter().count()).isZero();
    assertThat(meters.get("xds.upstream.streams.abandoned").counter().count()).isEqualTo(1);
  }

  @Test
  void aReconnectWaitsForItsTurnAsANewSessionDoes() throws Exception {
    ScriptedControlPlane controlPlane = add(new ScriptedControlPlane());
    SotwUpstreamSession session = oneStartASecond(controlPlane);
    session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));
    controlPlane.nextRequest(WAIT);
    assertThat(controlPlane.streamsOpened()).isEqualTo(1);

    controlPlane.endStream(Status.UNAVAILABLE.withDescription("restarting"));
    await().atMost(WAIT).until(() -> time.pendingTasks() == 1); // the backoff, 100 ms
    time.forwardTime(Duration.ofMillis(100));
    assertThat(waiting()).as("backed off, now waiting for its turn").isEqualTo(1);

    // The first stream took the one token at 0 ms; the next is due at 1,000 ms.
    time.forwardTime(Duration.ofMillis(899));
    controlPlane.expectNoRequest(Duration.ofMillis(100));
    assertThat(controlPlane.streamsOpened()).as("1 ms before its turn").isEqualTo(1);
    time.forwardTime(Duration.ofMillis(1));
    controlPlane.nextRequest(WAIT);
    assertThat(controlPlane.streamsOpened()).isEqualTo(2);
    assertThat(waiting()).isZero();
  }
}
