package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.StringValue;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.xdsproxy.core.testing.FakeClock;
import io.xdsproxy.core.testing.ScriptedUpstream;
import io.xdsproxy.core.testing.TestGroups;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A node group opened with a state saved before a restart: served at once, replaced by the
 * upstream's only as the upstream says, never shrunk by a not-found timer of an upstream not
 * reached, and saved again only for what the upstream changed. On a fake clock.
 */
class SavedStateTest {

  private static final Duration CONFIRM = Duration.ofSeconds(15);
  private static final Node NODE = Node.newBuilder().setId("envoy-1").setCluster("fleet").build();
  private static final Instant SAVED_AT = Instant.parse("2025-12-31T23:00:00Z");

  private final FakeClock time = new FakeClock();
  private final ScriptedUpstream upstream = new ScriptedUpstream(false);
  private final Saved saved = new Saved();
  private final NodeGroups groups =
      TestGroups.byCluster(upstream, time, Duration.ofMinutes(5), new SimpleMeterRegistry(), saved);

  @AfterEach
  void close() {
    groups.close();
  }

  @Test
  void theSavedStateIsServedWithTheVersionsItHadAndIsNotSavedAgain() throws Exception {
    XdsResource a = resource("a", "1");
    XdsResource b = resource("b", "1");
    saved.state = state(TypeUrl.LISTENER, true, a, b);

    NodeGroup group = groups.acquire(NODE);

    TypeSnapshot listeners = group.snapshot(TypeUrl.LISTENER);
    assertThat(listeners.resources()).containsOnlyKeys("a", "b");
    assertThat(listeners.isComplete()).isTrue();
    assertThat(listeners.version())
        .as("the version a client that had this state before the restart knows")
        .isEqualTo(Versions.ofResources(List.of(a, b)));
    assertThat(group.fromDisk()).isEqualTo(Map.of(TypeUrl.LISTENER, SAVED_AT));
    assertThat(saved.changes).as("what came from disk is not saved as if new").isZero();
  }

  @Test
  void aNotFoundTimerOfAnUpstreamNotReachedDoesNotRemoveASavedResource() throws Exception {
    saved.state = state(TypeUrl.ENDPOINT, false, resource("a", "1"));
    NodeGroup group = groups.acquire(NODE);

    // What the session's not-found timer publishes when the upstream never answered.
    upstream.send(ResourceUpdate.partial(TypeUrl.ENDPOINT, List.of(), Set.of("a"), false));

    assertThat(group.snapshot(TypeUrl.ENDPOINT).resources()).containsOnlyKeys("a");
    assertThat(group.fromDisk()).containsOnlyKeys(TypeUrl.ENDPOINT);
  }

  @Test
  void aPartialAnswerReplacesTheNamesItSendsAndTheRestLeaveAfterTheNotFoundTimeout()
      throws Exception {
    saved.state = state(TypeUrl.ENDPOINT, false, resource("a", "1"), resource("b", "1"));
    NodeGroup group = groups.acquire(NODE);

    upstream.send(
        ResourceUpdate.partial(TypeUrl.ENDPOINT, List.of(resource("a", "2")), Set.of(), false));

    assertThat(group.snapshot(TypeUrl.ENDPOINT).get("a").version()).isEqualTo("2");
    assertThat(group.snapshot(TypeUrl.ENDPOINT).get("b"))
        .as("saved, not named yet by an upstream that answers")
        .isNotNull();
    assertThat(saved.changes).isEqualTo(1);

    time.forwardTime(CONFIRM.minusMillis(1));
    assertThat(group.snapshot(TypeUrl.ENDPOINT).get("b")).as("a millisecond before").isNotNull();
    time.forwardTime(Duration.ofMillis(1));
    assertThat(group.snapshot(TypeUrl.ENDPOINT).resources()).containsOnlyKeys("a");
    assertThat(group.snapshot(TypeUrl.ENDPOINT).state("b"))
        .isEqualTo(TypeSnapshot.NameState.ABSENT);
    assertThat(group.fromDisk()).isEmpty();
  }

  @Test
  void aSotwWildcardAnswerReplacesTheWholeSavedType() throws Exception {
    saved.state = state(TypeUrl.LISTENER, true, resource("a", "1"), resource("gone", "1"));
    NodeGroup group = groups.acquire(NODE);

    upstream.send(ResourceUpdate.complete(TypeUrl.LISTENER, List.of(resource("a", "1"))));

    assertThat(group.snapshot(TypeUrl.LISTENER).resources()).containsOnlyKeys("a");
    assertThat(group.fromDisk()).isEmpty();
  }

  @Test
  void aDeltaWildcardAnswerRemovesTheSavedResourcesItDoesNotName() throws Exception {
    saved.state = state(TypeUrl.CLUSTER, true, resource("a", "1"), resource("gone", "1"));
    NodeGroup group = groups.acquire(NODE);

    // A Delta upstream's wildcard answer: every resource it has, the store complete after it.
    upstream.send(
        ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(resource("a", "2")), Set.of(), true));

    assertThat(group.snapshot(TypeUrl.CLUSTER).resources()).containsOnlyKeys("a");
    assertThat(group.snapshot(TypeUrl.CLUSTER).get("a").version()).isEqualTo("2");
    assertThat(group.fromDisk()).isEmpty();
  }

  @Test
  void anUpstreamAnswerOfOneTypeLeavesTheOtherSavedTypesAsTheyAre() throws Exception {
    saved.state =
        new SavedState(
            SAVED_AT,
            Map.of(
                TypeUrl.LISTENER,
                new SavedState.Type(SAVED_AT, List.of(resource("l", "1")), true),
                TypeUrl.CLUSTER,
                new SavedState.Type(SAVED_AT, List.of(resource("c", "1")), true)));
    NodeGroup group = groups.acquire(NODE);

    upstream.send(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(resource("d", "1"))));

    assertThat(group.snapshot(TypeUrl.LISTENER).resources()).containsOnlyKeys("l");
    assertThat(group.fromDisk()).containsOnlyKeys(TypeUrl.LISTENER);
  }

  private static SavedState state(TypeUrl type, boolean complete, XdsResource... resources) {
    return new SavedState(
        SAVED_AT, Map.of(type, new SavedState.Type(SAVED_AT, List.of(resources), complete)));
  }

  private static XdsResource resource(String name, String version) {
    return new XdsResource(
        name,
        version,
        Any.pack(StringValue.of(name + version)),
        List.of(),
        Optional.empty(),
        false);
  }

  /** What the group was saved as, and how many changes it reported to be saved again. */
  private static final class Saved implements SavedStates {
    SavedState state;
    int changes;

    @Override
    public Optional<SavedState> load(NodeGroupKey key) {
      return Optional.ofNullable(state);
    }

    @Override
    public void changed(NodeGroup group, List<ResourceUpdate> updates) {
      changes++;
    }

    @Override
    public Duration confirmTimeout() {
      return CONFIRM;
    }
  }
}
