package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.xdsproxy.core.TypeSnapshot.NameState;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TypeSnapshotTest {

  private final ResourceStore store = new ResourceStore(Ticker.SYSTEM);

  private static XdsResource cluster(String name, int timeoutSeconds) {
    Cluster cluster =
        Cluster.newBuilder()
            .setName(name)
            .setConnectTimeout(com.google.protobuf.Duration.newBuilder().setSeconds(timeoutSeconds))
            .build();
    return XdsResource.of(name, Any.pack(cluster));
  }

  @Test
  void anUnchangedResourceKeepsItsObjectAndPublishesNoNewSnapshot() {
    TypeSnapshot first =
        store
            .apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1))))
            .orElseThrow();

    assertThat(store.apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1)))))
        .isEmpty();
    assertThat(store.snapshot(TypeUrl.CLUSTER)).isSameAs(first);
  }

  @Test
  void aChangeKeepsTheObjectsOfUnchangedResourcesAndChangesTheTypeVersion() {
    TypeSnapshot first =
        store
            .apply(
                ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1), cluster("b", 1))))
            .orElseThrow();

    TypeSnapshot second =
        store
            .apply(
                ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1), cluster("b", 2))))
            .orElseThrow();

    assertThat(second.get("a")).isSameAs(first.get("a"));
    assertThat(second.get("b")).isNotSameAs(first.get("b"));
    assertThat(second.version()).isNotEqualTo(first.version());
  }

  @Test
  void theTypeVersionIsAFunctionOfContentAlone() {
    ResourceStore other = new ResourceStore(Ticker.SYSTEM);
    store.apply(
        ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1), cluster("b", 1))));
    other.apply(ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(cluster("b", 1)), Set.of(), false));
    other.apply(ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(cluster("a", 1)), Set.of(), false));

    assertThat(other.snapshot(TypeUrl.CLUSTER).version())
        .isEqualTo(store.snapshot(TypeUrl.CLUSTER).version());
  }

  @Test
  void aCompleteUpdateMakesEveryOtherNameAbsent() {
    store.apply(
        ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1), cluster("b", 1))));

    TypeSnapshot snapshot =
        store
            .apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1))))
            .orElseThrow();

    assertThat(snapshot.resources()).containsOnlyKeys("a");
    assertThat(snapshot.state("b")).isEqualTo(NameState.ABSENT);
    assertThat(snapshot.state("never-heard-of")).isEqualTo(NameState.ABSENT);
  }

  @Test
  void aPartialUpdateKnowsOnlyWhatItWasToldAbsent() {
    TypeSnapshot snapshot =
        store
            .apply(
                ResourceUpdate.partial(
                    TypeUrl.CLUSTER, List.of(cluster("a", 1)), Set.of("gone"), false))
            .orElseThrow();

    assertThat(snapshot.state("a")).isEqualTo(NameState.PRESENT);
    assertThat(snapshot.state("gone")).isEqualTo(NameState.ABSENT);
    assertThat(snapshot.state("other")).isEqualTo(NameState.UNKNOWN);
  }

  @Test
  void forgettingANameMakesItUnknownAgain() {
    store.apply(
        ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(cluster("a", 1)), Set.of("gone"), false));

    TypeSnapshot snapshot =
        store.apply(ResourceUpdate.forget(TypeUrl.CLUSTER, Set.of("a", "gone"))).orElseThrow();

    assertThat(snapshot.state("a")).isEqualTo(NameState.UNKNOWN);
    assertThat(snapshot.state("gone")).isEqualTo(NameState.UNKNOWN);
  }

  @Test
  void aTypeNeverHeardOfIsNotReceived() {
    assertThat(store.snapshot(TypeUrl.ROUTE).isReceived()).isFalse();
    store.apply(ResourceUpdate.complete(TypeUrl.ROUTE, List.of()));
    assertThat(store.snapshot(TypeUrl.ROUTE).isReceived()).isTrue();
  }

  @Test
  void aHeartbeatRefreshesAResourceAsANewObjectWithTheSameContentAndVersion() {
    TypeSnapshot first =
        store
            .apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1))))
            .orElseThrow();

    TypeSnapshot beat =
        store
            .apply(
                ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(), Set.of(), false)
                    .withHeartbeats(Set.of("a")))
            .orElseThrow();

    assertThat(beat.get("a")).isNotSameAs(first.get("a"));
    assertThat(beat.get("a").sameAs(first.get("a"))).isTrue();
    assertThat(beat.version()).isEqualTo(first.version());
    assertThat(beat.isComplete()).as("a partial update keeps a complete store complete").isTrue();
  }

  @Test
  void aHeartbeatInAFullStateKeepsItsResourceAndTheRestIsReplaced() {
    store.apply(
        ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1), cluster("b", 1))));

    TypeSnapshot next =
        store
            .apply(
                ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("c", 1)))
                    .withHeartbeats(Set.of("a")))
            .orElseThrow();

    assertThat(next.resources()).containsOnlyKeys("a", "c");
    assertThat(next.state("b")).isEqualTo(NameState.ABSENT);
  }

  @Test
  void forgettingNamesMakesACompleteStoreIncomplete() {
    store.apply(
        ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1), cluster("b", 1))));

    TypeSnapshot next =
        store.apply(ResourceUpdate.forget(TypeUrl.CLUSTER, Set.of("b"))).orElseThrow();

    assertThat(next.isComplete()).isFalse();
    assertThat(next.state("b")).as("forgotten, not known to be gone").isEqualTo(NameState.UNKNOWN);
  }

  @Test
  void aSnapshotNamesWhatChangedSinceAnEarlierOne() {
    TypeSnapshot first =
        store
            .apply(
                ResourceUpdate.complete(
                    TypeUrl.CLUSTER, List.of(cluster("a", 1), cluster("b", 1), cluster("c", 1))))
            .orElseThrow();
    TypeSnapshot second =
        store
            .apply(
                ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(cluster("a", 2)), Set.of(), false))
            .orElseThrow();
    TypeSnapshot third =
        store
            .apply(
                ResourceUpdate.partial(
                    TypeUrl.CLUSTER, List.of(cluster("b", 1)), Set.of("c"), false))
            .orElseThrow();

    assertThat(second.changedSince(first)).hasValue(Set.of("a"));
    assertThat(third.changedSince(second)).as("b is unchanged; c is removed").hasValue(Set.of("c"));
    assertThat(third.changedSince(first)).hasValue(Set.of("a", "c"));
    assertThat(third.changedSince(third)).hasValue(Set.of());
    assertThat(first.changedSince(TypeSnapshot.empty(TypeUrl.CLUSTER)))
        .as("the first answer changes everything")
        .isEmpty();
    assertThat(first.changedSince(third)).as("a later snapshot is not earlier").isEmpty();
  }

  @Test
  void aStreamTooFarBehindOrAChangeOfCompletenessMeansCompareEverything() {
    TypeSnapshot first =
        store
            .apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 0))))
            .orElseThrow();
    TypeSnapshot second =
        store
            .apply(
                ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(cluster("b", 0)), Set.of(), false))
            .orElseThrow();
    TypeSnapshot latest = second;
    for (int i = 1; i < TypeSnapshot.CHANGES_KEPT; i++) {
      latest =
          store
              .apply(
                  ResourceUpdate.partial(
                      TypeUrl.CLUSTER, List.of(cluster("a", i)), Set.of(), false))
              .orElseThrow();
    }
    assertThat(latest.changedSince(second))
        .as("%d changes back", TypeSnapshot.CHANGES_KEPT - 1)
        .hasValue(Set.of("a"));
    assertThat(latest.changedSince(first))
        .as("%d changes back", TypeSnapshot.CHANGES_KEPT)
        .hasValue(Set.of("a", "b"));
    latest =
        store
            .apply(
                ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(cluster("a", 99)), Set.of(), false))
            .orElseThrow();
    assertThat(latest.changedSince(first))
        .as("%d changes back", TypeSnapshot.CHANGES_KEPT + 1)
        .isEmpty();

    TypeSnapshot forgotten =
        store.apply(ResourceUpdate.forget(TypeUrl.CLUSTER, Set.of("zzz"))).orElseThrow();
    assertThat(forgotten.isComplete()).isFalse();
    assertThat(forgotten.changedSince(latest)).as("every name not held changed state").isEmpty();
  }

  @Test
  void sharedResultsAreMadeOnceUntilTheSnapshotSharesTheirMaximumWeight() {
    TypeSnapshot snapshot =
        store
            .apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1))))
            .orElseThrow();
    java.util.concurrent.atomic.AtomicInteger made =
        new java.util.concurrent.atomic.AtomicInteger();
    long half = TypeSnapshot.SHARED_WEIGHT_MAX / 2;

    Object first = snapshot.share("p1", () -> "made " + made.incrementAndGet(), s -> half);
    assertThat(snapshot.share("p1", () -> "made " + made.incrementAndGet(), s -> half))
        .isSameAs(first);
    snapshot.share("p2", () -> "made " + made.incrementAndGet(), s -> half);
    Object alone = snapshot.share("p3", () -> "made " + made.incrementAndGet(), s -> half);

    assertThat(made).hasValue(3);
    assertThat(snapshot.share("p3", () -> "made " + made.incrementAndGet(), s -> half))
        .as("past the maximum weight, made for each caller")
        .isNotSameAs(alone)
        .isEqualTo("made 4");
    assertThat(snapshot.share("p1", () -> "made again", s -> half))
        .as("what is shared stays shared")
        .isSameAs(first);
  }

  @Test
  void aSnapshotIsKeptForItsUncacheableResourcesOnlyWhenItHasSome() {
    TypeSnapshot plain =
        store
            .apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1))))
            .orElseThrow();
    XdsResource fresh = cluster("b", 1);
    TypeSnapshot withUncacheable =
        store
            .apply(
                ResourceUpdate.complete(
                    TypeUrl.CLUSTER,
                    List.of(
                        cluster("a", 1),
                        new XdsResource(
                            "b",
                            fresh.version(),
                            fresh.body(),
                            List.of(),
                            java.util.Optional.empty(),
                            true))))
            .orElseThrow();

    assertThat(plain.ifUncacheable()).isNull();
    assertThat(withUncacheable.ifUncacheable()).isSameAs(withUncacheable);
  }

  @Test
  void aFullStateResentAsItIsIsNoChangeButOneNameForAnotherOrADoNotCacheResourceAgainIs() {
    XdsResource a = cluster("a", 1);
    TypeSnapshot first =
        store
            .apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(a, cluster("b", 1))))
            .orElseThrow();

    assertThat(store.apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("b", 1), a))))
        .as("every resource again, held or equal to what is held, in another order")
        .isEmpty();
    assertThat(store.apply(ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(a), Set.of(), false)))
        .as("one of them again, in a partial update")
        .isEmpty();
    TypeSnapshot swapped =
        store
            .apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(a, cluster("c", 1))))
            .orElseThrow();
    assertThat(swapped.get("b")).as("as many names, one of them another").isNull();
    assertThat(swapped.get("a")).isSameAs(first.get("a"));

    XdsResource uncacheable =
        new XdsResource("c", a.version(), a.body(), List.of(), java.util.Optional.empty(), true);
    store.apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(a, uncacheable))).orElseThrow();
    assertThat(store.apply(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(a, uncacheable))))
        .as("a do_not_cache resource, even the same object, is delivered each time it comes")
        .isPresent();
  }

  @Test
  void theTypeVersionFollowsEveryKindOfChangeAsIfMadeAfreshAndSoDoesWhatIsUncacheable() {
    XdsResource a = cluster("a", 1);
    XdsResource uncacheable =
        new XdsResource(
            "u",
            cluster("u", 1).version(),
            cluster("u", 1).body(),
            List.of(),
            java.util.Optional.empty(),
            true);
    List<ResourceUpdate> updates =
        List.of(
            ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(a, cluster("b", 1))),
            ResourceUpdate.partial(
                TypeUrl.CLUSTER, List.of(cluster("b", 2), cluster("c", 1)), Set.of(), false),
            ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(uncacheable), Set.of("a"), false),
            ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(), Set.of(), false)
                .withHeartbeats(Set.of("c")),
            ResourceUpdate.forget(TypeUrl.CLUSTER, Set.of("u")),
            ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(a), Set.of("b"), false),
            ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("c", 1), cluster("d", 1))));
    List<Boolean> uncacheableAfter = new java.util.ArrayList<>();

    for (ResourceUpdate update : updates) {
      store.apply(update);
      TypeSnapshot snapshot = store.snapshot(TypeUrl.CLUSTER);
      assertThat(snapshot.version())
          .as("after %s: the version of what it holds, %s", update, snapshot.resources().keySet())
          .isEqualTo(Versions.ofResources(snapshot.resources().values()));
      uncacheableAfter.add(snapshot.ifUncacheable() != null);
    }
    assertThat(uncacheableAfter).containsExactly(false, false, true, true, false, false, false);
  }
}
