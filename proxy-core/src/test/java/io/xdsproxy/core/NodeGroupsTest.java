package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.StringValue;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.xdsproxy.core.UpstreamSource.UpstreamListener;
import io.xdsproxy.core.UpstreamSource.UpstreamSession;
import io.xdsproxy.core.testing.FakeClock;
import io.xdsproxy.core.testing.TestGroups;
import io.xdsproxy.core.testing.TestWatcher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The timed rules of the node groups (the idle grace, TTLs) and the time an update is stamped with,
 * on a fake clock: exact to the millisecond, without waiting.
 */
class NodeGroupsTest {

  private static final Duration GRACE = Duration.ofSeconds(30);
  private static final Node NODE = Node.newBuilder().setId("envoy-1").setCluster("fleet").build();

  private final FakeClock time = new FakeClock();
  private final FakeUpstream upstream = new FakeUpstream();
  private final NodeGroups groups =
      TestGroups.byCluster(upstream, time, GRACE, new SimpleMeterRegistry(), SavedStates.NONE);

  @AfterEach
  void close() {
    groups.close();
  }

  @Test
  void aGroupWithoutStreamsIsClosedExactlyAfterTheGraceNotBefore() throws Exception {
    NodeGroup group = groups.acquire(NODE);
    groups.release(group);

    time.forwardTime(GRACE.minusMillis(1));
    assertThat(groups.groups()).as("a millisecond before the grace ends").containsExactly(group);
    assertThat(upstream.sessions.get(0).closed).isFalse();

    time.forwardTime(Duration.ofMillis(1));
    assertThat(groups.groups()).as("when the grace ends").isEmpty();
    assertThat(upstream.sessions.get(0).closed).as("its upstream session").isTrue();
  }

  @Test
  void aStreamJoiningWithinTheGraceKeepsTheGroup() throws Exception {
    NodeGroup group = groups.acquire(NODE);
    groups.release(group);
    time.forwardTime(GRACE.minusSeconds(1));

    NodeGroup again = groups.acquire(NODE);
    time.forwardTime(GRACE.multipliedBy(10));

    assertThat(again).as("the same group, not a new one").isSameAs(group);
    assertThat(groups.groups()).containsExactly(group);
    assertThat(upstream.sessions).hasSize(1);
    assertThat(upstream.sessions.get(0).closed).isFalse();
  }

  @Test
  void theGraceRunsFromTheLastStreamLeavingNotFromAnEarlierOne() throws Exception {
    NodeGroup group = groups.acquire(NODE);
    groups.release(group);
    time.forwardTime(Duration.ofSeconds(20));
    groups.release(groups.acquire(NODE));

    time.forwardTime(GRACE.minusMillis(1));
    assertThat(groups.groups())
        .as("a millisecond before the grace from the last stream's leaving ends")
        .containsExactly(group);

    time.forwardTime(Duration.ofMillis(1));
    assertThat(groups.groups()).as("when it ends").isEmpty();
  }

  @Test
  void anUpdateIsStampedWithTheTimeItReachedTheProxy() throws Exception {
    NodeGroup group = groups.acquire(NODE);
    time.forwardTime(Duration.ofMillis(1234));

    upstream.sessions.get(0).listener.onUpdate(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of()));

    assertThat(group.snapshot(TypeUrl.CLUSTER).changedAt())
        .isEqualTo(Duration.ofMillis(1234).toNanos());
  }

  @Test
  void aResourceWithATtlLeavesTheStoreExactlyWhenItLapsesWithoutAHeartbeat() throws Exception {
    NodeGroup group = groups.acquire(NODE);
    XdsResource leased =
        new XdsResource(
            "leased",
            "1",
            Any.pack(StringValue.of("body")),
            List.of(),
            Optional.of(Durations.fromSeconds(10)),
            false);

    upstream
        .sessions
        .get(0)
        .listener
        .onUpdate(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(leased)));
    time.forwardTime(Duration.ofSeconds(10).minusMillis(1));
    assertThat(group.snapshot(TypeUrl.CLUSTER).get("leased")).isSameAs(leased);

    time.forwardTime(Duration.ofMillis(1));
    assertThat(group.snapshot(TypeUrl.CLUSTER).get("leased")).as("lapsed").isNull();
  }

  @Test
  void streamsHoldingOneInterestAreCountedSoThatTheUnionLosesANameOnlyWithItsLastStream()
      throws Exception {
    NodeGroup group = groups.acquire(NODE);
    List<Interest> asked = upstream.sessions.get(0).interests;
    Interest ab = new Interest(false, java.util.Set.of("a", "b"));
    Interest bc = new Interest(false, java.util.Set.of("b", "c"));
    GroupWatcher first = new TestWatcher();
    GroupWatcher second = new TestWatcher();
    GroupWatcher third = new TestWatcher();

    group.subscribe(first, TypeUrl.CLUSTER, ab);
    group.subscribe(second, TypeUrl.CLUSTER, ab); // the same instance, as interned ones are
    group.subscribe(third, TypeUrl.CLUSTER, bc);
    assertThat(asked.get(asked.size() - 1).names()).containsExactlyInAnyOrder("a", "b", "c");

    group.leave(first);
    assertThat(asked.get(asked.size() - 1).names())
        .as("the second stream still wants a")
        .containsExactlyInAnyOrder("a", "b", "c");
    group.subscribe(second, TypeUrl.CLUSTER, Interest.NONE);
    assertThat(asked.get(asked.size() - 1).names()).containsExactlyInAnyOrder("b", "c");
    group.leave(third);
    assertThat(asked.get(asked.size() - 1).isEmpty()).isTrue();
  }

  @Test
  void aSubscriptionThatWouldTakeTheGroupPastItsNameBytesIsRefusedWholeAndTheOthersStand()
      throws Exception {
    // Names of 8 characters take 10 bytes in a request (a tag and a length): 3 of them fit in 35.
    GroupLimits limits = new GroupLimits(100, 100, 100, 35);
    NodeGroup group = groups.acquire(NODE, VerifiedIdentity.anonymous("192.0.2.1"), limits);
    FakeSession session = upstream.sessions.get(0);
    assertThat(session.tenant).isEqualTo("address 192.0.2.1");
    TestWatcher modest = new TestWatcher();
    TestWatcher greedy = new TestWatcher();

    group.subscribe(modest, TypeUrl.ROUTE, new Interest(false, Set.of("route-01", "route-02")));
    group.subscribe(
        greedy, TypeUrl.ROUTE, new Interest(false, Set.of("route-02", "route-03", "route-04")));

    assertThat(greedy.refusals).hasSize(1);
    assertThat(greedy.refusals.get(0).limit()).isEqualTo("upstream_names_bytes");
    assertThat(greedy.refusals.get(0).flag()).isEqualTo("--max-upstream-names-bytes-per-group");
    assertThat(greedy.refusals.get(0).getMessage())
        .contains(
            "node group fleet",
            "40 bytes of envoy.config.route.v3.RouteConfiguration names",
            "more than the 35");
    assertThat(session.interests)
        .as("what the upstream was asked for: none of the refused change")
        .containsExactly(new Interest(false, Set.of("route-01", "route-02")));
    assertThat(modest.refusals).isEmpty();

    group.subscribe(greedy, TypeUrl.ROUTE, new Interest(false, Set.of("route-02", "route-03")));
    group.subscribe(greedy, TypeUrl.CLUSTER, new Interest(false, Set.of("cluster1", "cluster2")));
    assertThat(greedy.refusals).as("within the bound, of each type").hasSize(1);
    assertThat(session.interests.get(session.interests.size() - 2).names())
        .containsExactlyInAnyOrder("route-01", "route-02", "route-03");
    group.leave(modest);
    group.subscribe(
        greedy, TypeUrl.ROUTE, new Interest(false, Set.of("route-02", "route-03", "route-04")));
    assertThat(greedy.refusals).as("room the modest stream left").hasSize(1);
  }

  /** An upstream that sends nothing by itself: the test speaks for it through each listener. */
  private static final class FakeUpstream implements UpstreamSource {
    final List<FakeSession> sessions = new ArrayList<>();

    @Override
    public UpstreamSession open(
        NodeGroupKey group, Node node, String tenant, UpstreamListener listener) {
      FakeSession session = new FakeSession(listener, tenant);
      sessions.add(session);
      return session;
    }

    @Override
    public String describe() {
      return "fake";
    }

    @Override
    public boolean reached() {
      return true;
    }

    @Override
    public void close() {}
  }

  private static final class FakeSession implements UpstreamSession {
    final UpstreamListener listener;
    final String tenant;
    final List<Interest> interests = new ArrayList<>();
    boolean closed;

    FakeSession(UpstreamListener listener, String tenant) {
      this.listener = listener;
      this.tenant = tenant;
    }

    @Override
    public void updateInterest(TypeUrl type, Interest interest) {
      interests.add(interest);
    }

    @Override
    public void refetch(TypeUrl type) {}

    @Override
    public void close() {
      closed = true;
    }
  }
}
