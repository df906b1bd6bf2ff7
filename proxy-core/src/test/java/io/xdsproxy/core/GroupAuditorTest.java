package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.StringValue;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.xdsproxy.core.UpstreamSource.AuditedType;
import io.xdsproxy.core.testing.FakeClock;
import io.xdsproxy.core.testing.ScriptedUpstream;
import io.xdsproxy.core.testing.TestGroups;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * When the group audit runs and what it counts, on a fake clock: one audit at a time, each group
 * again only after the interval, members in turn and never the upstream node, a difference counted
 * only when a second look finds it too.
 */
class GroupAuditorTest {

  private static final Executor CALLING_THREAD = Runnable::run;
  private static final Duration INTERVAL = Duration.ofSeconds(30);
  private static final Duration MIN_GAP = Duration.ofSeconds(1);
  private static final Interest WILDCARD = new Interest(true, Set.of());
  private static final XdsResource SERVED = resource("served");
  private static final XdsResource OTHER = resource("other");

  private final FakeClock time = new FakeClock();
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final AuditedUpstream upstream = new AuditedUpstream();
  private final NodeGroups groups =
      TestGroups.byCluster(upstream, time, Duration.ofMinutes(5), meters, SavedStates.NONE);
  private final GroupAuditor auditor =
      new GroupAuditor(
              groups,
              upstream,
              CALLING_THREAD,
              time.scheduler(),
              time.ticker(),
              time.clock(),
              INTERVAL,
              MIN_GAP,
              Duration.ofMinutes(1),
              meters)
          .start();

  @AfterEach
  void close() {
    auditor.close();
    groups.close();
  }

  private static XdsResource resource(String value) {
    return XdsResource.of("c", com.google.protobuf.Any.pack(StringValue.of(value)));
  }

  private static Node node(String id, String cluster) {
    return Node.newBuilder().setId(id).setCluster(cluster).build();
  }

  /** A group of {@code ids}, the first its upstream node, wanting every Cluster, served SERVED. */
  private NodeGroup group(String cluster, String... ids) throws Exception {
    NodeGroup group = null;
    for (String id : ids) {
      group = groups.acquire(node(id, cluster));
    }
    group.subscribe(new io.xdsproxy.core.testing.TestWatcher(), TypeUrl.CLUSTER, WILDCARD);
    upstream.send(
        new NodeGroupKey(cluster), ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(SERVED)));
    return group;
  }

  private double audits(String result) {
    return meters.get("xds.group.audits").tag("result", result).counter().count();
  }

  private double mismatches(String group) {
    return meters.get("xds.group.audit.mismatches").tag("group", group).counter().count();
  }

  @Test
  void oneAuditAtATimeAndEachGroupAgainOnlyAfterTheInterval() throws Exception {
    group("checkout", "checkout-1", "checkout-2");
    group("refunds", "refunds-1", "refunds-2");

    time.forwardTime(MIN_GAP);
    assertThat(upstream.asked).as("the first turn").containsExactly("checkout-2");
    time.forwardTime(MIN_GAP.multipliedBy(5));
    assertThat(upstream.asked).as("while the first audit is under way").hasSize(1);

    upstream.answer(SERVED);
    time.forwardTime(MIN_GAP);
    assertThat(upstream.asked).containsExactly("checkout-2", "refunds-2");
    upstream.answer(SERVED);
    assertThat(audits("match")).isEqualTo(2);

    time.forwardTime(INTERVAL.minus(MIN_GAP.multipliedBy(8)));
    assertThat(upstream.asked).as("before a group's interval is over").hasSize(2);
    time.forwardTime(MIN_GAP.multipliedBy(2));
    assertThat(upstream.asked).containsExactly("checkout-2", "refunds-2", "checkout-2");
  }

  @Test
  void membersAreAuditedInTurnAndTheUpstreamNodeNever() throws Exception {
    group("checkout", "checkout-1", "checkout-2", "checkout-3");
    for (int i = 0; i < 4; i++) {
      time.forwardTime(INTERVAL);
      upstream.answer(SERVED);
    }
    assertThat(upstream.asked)
        .containsExactly("checkout-3", "checkout-2", "checkout-3", "checkout-2");
  }

  @Test
  void aDifferenceCountsOnlyWhenASecondLookFindsItToo() throws Exception {
    group("checkout", "checkout-1", "checkout-2");

    time.forwardTime(MIN_GAP);
    upstream.answer(OTHER);
    assertThat(upstream.asked).as("a second look at once").hasSize(2);
    upstream.answer(SERVED);
    assertThat(audits("match")).isEqualTo(1);
    assertThat(mismatches("checkout")).isZero();

    time.forwardTime(INTERVAL);
    upstream.answer(OTHER);
    upstream.answer(OTHER);
    assertThat(audits("mismatch")).isEqualTo(1);
    assertThat(mismatches("checkout")).isEqualTo(1);
    GroupAuditor.Result result = auditor.lastResult(new NodeGroupKey("checkout")).orElseThrow();
    assertThat(result.node()).isEqualTo("checkout-2");
    assertThat(result.outcome()).isEqualTo(GroupAuditor.Outcome.MISMATCH);
    assertThat(result.differences())
        .containsExactly(
            new AuditComparison.Difference(TypeUrl.CLUSTER, "c", AuditComparison.Kind.CONTENT));
  }

  @Test
  void anAuditTheUpstreamFailsIsCountedAsFailed() throws Exception {
    group("checkout", "checkout-1", "checkout-2");
    time.forwardTime(MIN_GAP);
    upstream.pending.remove(0).completeExceptionally(new IllegalStateException("stream ended"));
    assertThat(audits("failed")).isEqualTo(1);
    assertThat(auditor.lastResult(new NodeGroupKey("checkout")).orElseThrow().detail())
        .isEqualTo("stream ended");
  }

  @Test
  void aGroupWithNoMemberButItsUpstreamNodeIsNotAudited() throws Exception {
    group("checkout", "checkout-1", "checkout-1");
    time.forwardTime(INTERVAL.multipliedBy(3));
    assertThat(upstream.asked).isEmpty();
  }

  /** An upstream whose audits the test answers, one by one. */
  private static final class AuditedUpstream extends ScriptedUpstream {
    final List<String> asked = new ArrayList<>();
    final List<CompletableFuture<Map<TypeUrl, AuditedType>>> pending = new ArrayList<>();

    AuditedUpstream() {
      super(true);
    }

    void answer(XdsResource cluster) {
      pending
          .remove(0)
          .complete(
              Map.of(
                  TypeUrl.CLUSTER,
                  new AuditedType(TypeUrl.CLUSTER, Map.of(cluster.name(), cluster))));
    }

    @Override
    public boolean auditable() {
      return true;
    }

    @Override
    public CompletableFuture<Map<TypeUrl, AuditedType>> audit(
        Node node, Map<TypeUrl, Interest> wanted) {
      assertThat(wanted).containsExactly(Map.entry(TypeUrl.CLUSTER, WILDCARD));
      asked.add(node.getId());
      CompletableFuture<Map<TypeUrl, AuditedType>> answer = new CompletableFuture<>();
      pending.add(answer);
      return answer;
    }
  }
}
