package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.Duration;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.xdsproxy.core.AuditComparison.Difference;
import io.xdsproxy.core.AuditComparison.Kind;
import io.xdsproxy.core.UpstreamSource.AuditedType;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * What the group audit counts as a difference between a group and one member node, and what not.
 */
class AuditComparisonTest {

  private static final Interest WILDCARD = new Interest(true, Set.of());

  private static XdsResource cluster(String name, int timeoutSeconds) {
    return XdsResource.of(
        name,
        Any.pack(
            Cluster.newBuilder()
                .setName(name)
                .setConnectTimeout(Duration.newBuilder().setSeconds(timeoutSeconds))
                .build()));
  }

  private static XdsResource withVersion(XdsResource resource, String version) {
    return new XdsResource(
        resource.name(),
        version,
        resource.body(),
        resource.aliases(),
        resource.ttl(),
        resource.doNotCache());
  }

  private static XdsResource uncacheable(XdsResource resource) {
    return new XdsResource(
        resource.name(), resource.version(), resource.body(), List.of(), Optional.empty(), true);
  }

  private static List<Difference> compare(
      Interest interest, TypeSnapshot before, TypeSnapshot now, XdsResource... node) {
    Map<String, XdsResource> byName = new java.util.HashMap<>();
    for (XdsResource resource : node) {
      byName.put(resource.name(), resource);
    }
    return AuditComparison.compare(
        Map.of(TypeUrl.CLUSTER, interest),
        Map.of(TypeUrl.CLUSTER, before),
        type -> now,
        Map.of(TypeUrl.CLUSTER, new AuditedType(TypeUrl.CLUSTER, byName)));
  }

  private static List<Difference> compare(
      Interest interest, TypeSnapshot group, XdsResource... node) {
    return compare(interest, group, group, node);
  }

  @Test
  void namesAndContentDifferButVersionsDoNot() {
    TypeSnapshot group =
        Snapshots.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1), cluster("b", 1)));

    assertThat(
            compare(
                WILDCARD,
                group,
                withVersion(cluster("a", 1), "push-7"),
                withVersion(cluster("b", 1), "push-7")))
        .as("the same resources under the node's own versions")
        .isEmpty();
    assertThat(compare(WILDCARD, group, cluster("a", 2), cluster("c", 1)))
        .containsExactly(
            new Difference(TypeUrl.CLUSTER, "a", Kind.CONTENT),
            new Difference(TypeUrl.CLUSTER, "b", Kind.ONLY_IN_GROUP),
            new Difference(TypeUrl.CLUSTER, "c", Kind.ONLY_FOR_NODE));
  }

  @Test
  void namedInterestComparesOnlyTheNamesAskedFor() {
    TypeSnapshot group =
        Snapshots.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1), cluster("b", 1)));

    assertThat(compare(new Interest(false, Set.of("a")), group, cluster("a", 1), cluster("z", 1)))
        .isEmpty();
    assertThat(compare(new Interest(false, Set.of("a", "b")), group, cluster("a", 1)))
        .containsExactly(new Difference(TypeUrl.CLUSTER, "b", Kind.ONLY_IN_GROUP));
  }

  @Test
  void doNotCacheResourcesAndNamesChangedDuringTheAuditDoNotCount() {
    TypeSnapshot before =
        Snapshots.complete(
            TypeUrl.CLUSTER, List.of(cluster("a", 1), uncacheable(cluster("token", 1))));
    TypeSnapshot now =
        Snapshots.next(
            before,
            ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(cluster("a", 3)), Set.of(), true));

    assertThat(compare(WILDCARD, before, now, cluster("a", 1), uncacheable(cluster("token", 2))))
        .as("a changed in the group while the node was asked; token is never cached")
        .isEmpty();
    assertThat(compare(WILDCARD, now, now, cluster("a", 1), uncacheable(cluster("token", 2))))
        .containsExactly(new Difference(TypeUrl.CLUSTER, "a", Kind.CONTENT));
  }

  @Test
  void aTypeTheGroupOrTheNodeHasNotBeenAnsweredForIsNotCompared() {
    TypeSnapshot never = TypeSnapshot.empty(TypeUrl.CLUSTER);
    assertThat(compare(WILDCARD, never, cluster("a", 1))).isEmpty();

    TypeSnapshot group = Snapshots.complete(TypeUrl.CLUSTER, List.of(cluster("a", 1)));
    assertThat(
            AuditComparison.compare(
                Map.of(TypeUrl.CLUSTER, WILDCARD), Map.of(), type -> group, Map.of()))
        .isEmpty();
  }
}
