package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
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
      XdsResource.of("backend", Any.pack(ClusterLoadAssignment.newBuilder().setClusterName("backend").build()));
  private static final TypeSnapshot STORE = Snapshots.complete(TypeUrl.ENDPOINT, List.of(BACKEND));

  @Test
  void aClaimedResourceDroppedAndSubscribedAgainIsSent() {
    DeltaTypeState state = new DeltaTypeState(TypeUrl.ENDPOINT, STORE, false, Clock.systemUTC());

    // A reconnecting client claims the version it has: nothing is owed, so nothing answers the claim.
    state.subscribe(List.of("backend"), List.of(), Map.of("backend", BACKEND.version()));
    assertThat(state.nextResponse(false)).isEmpty();
    // It drops the resource (its cluster went away), then wants it again (the cluster came back).
    state.subscribe(List.of(), List.of("backend"), Map.of());
    state.subscribe(List.of("backend"), List.of(), Map.of());

    Optional<DeltaTypeState.Outgoing> response = state.nextResponse(false);
    assertThat(response).as("found by DeltaRequestFuzzTest: the stale claim kept it from being sent").isPresent();
    assertThat(response.get().resources()).extracting(Resource::getName).containsExactly("backend");
  }
}
