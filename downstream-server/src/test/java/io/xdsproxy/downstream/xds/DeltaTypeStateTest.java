package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.xdsproxy.core.Snapshots;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class DeltaTypeStateTest {

  private static final XdsResource BACKEND =
      XdsResource.of(
          "backend",
          Any.pack(ClusterLoadAssignment.newBuilder().setClusterName("backend").build()));
  private static final TypeSnapshot STORE = Snapshots.complete(TypeUrl.ENDPOINT, List.of(BACKEND));

  @Test
  void aClaimedResourceDroppedAndSubscribedAgainIsSent() {
    DeltaTypeState state = new DeltaTypeState(TypeUrl.ENDPOINT, STORE, false, Clock.systemUTC());

    // A reconnecting client claims the version it has: nothing is owed but the answer to its first
    // request, empty (rule 17), which the transport has not taken yet, so the claim stands.
    state.subscribe(List.of("backend"), List.of(), Map.of("backend", BACKEND.version()));
    assertThat(state.nextResponse(false))
        .hasValueSatisfying(
            answer -> {
              assertThat(answer.included()).isEmpty();
              assertThat(answer.removed()).isEmpty();
            });
    // It drops the resource (its cluster went away), then wants it again (the cluster came back).
    state.subscribe(List.of(), List.of("backend"), Map.of());
    state.subscribe(List.of("backend"), List.of(), Map.of());

    Optional<DeltaTypeState.Outgoing> response = state.nextResponse(false);
    assertThat(response)
        .as("found by DeltaRequestFuzzTest: the stale claim kept it from being sent")
        .isPresent();
    assertThat(response.get().included()).extracting(XdsResource::name).containsExactly("backend");
  }

  @Test
  void aNameOwedUnderTheWildcardStaysOwedWhenThePhantomUnsubscribeComesBeforeTheResponse() {
    DeltaTypeState state = new DeltaTypeState(TypeUrl.CLUSTER, CLUSTERS, false, Clock.systemUTC());
    state.subscribe(List.of(), List.of(), Map.of()); // the legacy wildcard
    send(state);
    state.subscribe(List.of("a"), List.of(), Map.of()); // and "a" by name
    send(state);

    // "Unsubscribing from Resources": dropping "a" by name under the wildcard makes the client
    // unsure whether to keep it, so it is owed "a". The client is slow: before the response goes
    // out it unsubscribes "a" again, which it no longer names (a phantom unsubscription, to be
    // ignored).
    state.subscribe(List.of(), List.of("a"), Map.of());
    state.subscribe(List.of(), List.of("a"), Map.of());

    Optional<DeltaTypeState.Outgoing> response = state.nextResponse(false);
    assertThat(response)
        .as("found by DeltaRequestFuzzTest: the phantom unsubscription cancelled what was owed")
        .isPresent();
    assertThat(response.get().included()).extracting(XdsResource::name).containsExactly("a");
  }

  @Test
  void newcomersThatSubscribeAlikeShareOneFirstResponse() {
    DeltaTypeState one = new DeltaTypeState(TypeUrl.CLUSTER, CLUSTERS, false, Clock.systemUTC());
    DeltaTypeState two = new DeltaTypeState(TypeUrl.CLUSTER, CLUSTERS, false, Clock.systemUTC());
    one.subscribe(List.of("a", "b"), List.of(), Map.of());
    two.subscribe(List.of("a", "b"), List.of(), Map.of());

    DeltaTypeState.Outgoing first = one.nextResponse(false).orElseThrow();
    assertThat(two.nextResponse(false)).containsSame(first);
    assertThat(first.included()).extracting(XdsResource::name).containsExactlyInAnyOrder("a", "b");
  }

  @Test
  void aNewcomerThatDropsANameBeforeItsFirstResponseIsOwedTheOtherAlone() {
    DeltaTypeState state = new DeltaTypeState(TypeUrl.CLUSTER, CLUSTERS, false, Clock.systemUTC());
    state.subscribe(List.of("a", "b"), List.of(), Map.of()); // owed: its subscription's own set
    state.subscribe(List.of(), List.of("a"), Map.of());

    assertThat(state.nextResponse(false).orElseThrow().included())
        .extracting(XdsResource::name)
        .containsExactly("b");
    assertThat(state.subscription().names()).containsExactly("b");
  }

  private static final TypeSnapshot CLUSTERS =
      Snapshots.complete(
          TypeUrl.CLUSTER,
          List.of(
              XdsResource.of("a", Any.pack(Cluster.newBuilder().setName("a").build())),
              XdsResource.of("b", Any.pack(Cluster.newBuilder().setName("b").build()))));

  private static void send(DeltaTypeState state) {
    state.sent(state.nextResponse(false).orElseThrow(), 1);
  }
}
