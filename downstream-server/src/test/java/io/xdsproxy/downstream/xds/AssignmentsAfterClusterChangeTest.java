package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.xdsproxy.core.TypeUrl;
import java.io.InputStream;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Rule 18 of interop.md through a real stream of the proxy's ADS service (in process, every
 * executor on the calling thread): after a Cluster response that adds or changes a cluster, the
 * client is sent that cluster's assignment, changed or not, once, without waiting for the Cluster
 * ACK; nothing of a type or name it does not subscribe to.
 */
class AssignmentsAfterClusterChangeTest {

  private static final Node NODE = Node.newBuilder().setId("envoy-1").setCluster("fleet").build();

  private final MemoryUpstream upstream = new MemoryUpstream();
  private final InProcessProxy proxy = new InProcessProxy(upstream, Limits.DEFAULTS);

  @AfterEach
  void close() {
    proxy.close();
  }

  private static DiscoveryRequest sotw(TypeUrl type, String nonce, String... names) {
    return ClientRequests.sotw(NODE, type, nonce, names);
  }

  /** The SotW ACK of {@code response}: its nonce and version, the names asked for. */
  private static DiscoveryRequest ack(TypeUrl type, Written response, String... names) {
    return sotw(type, response.nonce(), names).toBuilder()
        .setVersionInfo(response.version())
        .build();
  }

  private static DeltaDiscoveryRequest delta(TypeUrl type, String nonce, String... subscribe) {
    return ClientRequests.delta(NODE, type, nonce, subscribe);
  }

  @Test
  void aSotwClientIsSentTheUnchangedAssignmentOfAChangedClusterRightAfterItOnce() throws Exception {
    upstream.put(TypeUrl.CLUSTER, "c", 1);
    upstream.put(TypeUrl.CLUSTER, "d", 1);
    upstream.put(TypeUrl.ENDPOINT, "c", 1);
    upstream.put(TypeUrl.ENDPOINT, "d", 1);
    InProcessCall<InputStream> call = proxy.sotw();
    call.receive(sotw(TypeUrl.CLUSTER, "").toByteArray());
    Written clusters = Written.sotw(call).get(0);
    call.receive(ack(TypeUrl.CLUSTER, clusters).toByteArray());
    call.receive(sotw(TypeUrl.ENDPOINT, "", "c", "d").toByteArray());
    Written endpoints = Written.sotw(call).get(0);
    call.receive(ack(TypeUrl.ENDPOINT, endpoints, "c", "d").toByteArray());

    upstream.put(TypeUrl.CLUSTER, "c", 2);

    List<Written> sent = Written.sotw(call);
    assertThat(sent).extracting(Written::type).containsExactly("Cluster", "ClusterLoadAssignment");
    assertThat(sent.get(0).names()).containsExactlyInAnyOrder("c", "d");
    assertThat(sent.get(1).names())
        .as("the changed cluster's assignment, unchanged; not d's")
        .containsExactly("c");
    // Envoy's warming request repeats its last EDS request (its nonce stale now), and its ACKs
    // follow: none is answered again.
    call.receive(ack(TypeUrl.ENDPOINT, endpoints, "c", "d").toByteArray());
    call.receive(ack(TypeUrl.ENDPOINT, sent.get(1), "c", "d").toByteArray());
    call.receive(ack(TypeUrl.CLUSTER, sent.get(0)).toByteArray());
    assertThat(Written.sotw(call)).as("no loop").isEmpty();
  }

  @Test
  void aDeltaClientIsSentTheUnchangedAssignmentOfAChangedClusterUnasked() throws Exception {
    upstream.put(TypeUrl.CLUSTER, "c", 1);
    upstream.put(TypeUrl.ENDPOINT, "c", 1);
    InProcessCall<InputStream> call = proxy.delta();
    call.receive(delta(TypeUrl.CLUSTER, "").toByteArray());
    String clusterNonce = Written.delta(call).get(0).nonce();
    call.receive(delta(TypeUrl.ENDPOINT, "", "c").toByteArray());
    String endpointNonce = Written.delta(call).get(0).nonce();
    call.receive(delta(TypeUrl.ENDPOINT, endpointNonce).toByteArray());
    call.receive(delta(TypeUrl.CLUSTER, clusterNonce).toByteArray());

    upstream.put(TypeUrl.CLUSTER, "c", 2);

    List<Written> sent = Written.delta(call);
    assertThat(sent).extracting(Written::type).containsExactly("Cluster", "ClusterLoadAssignment");
    assertThat(sent.get(1).names()).containsExactly("c");
    call.receive(delta(TypeUrl.ENDPOINT, sent.get(1).nonce()).toByteArray());
    assertThat(Written.delta(call)).as("no loop").isEmpty();
  }

  @Test
  void anAssignmentTheClientHasNotSubscribedToIsNotSentWithItsCluster() throws Exception {
    upstream.put(TypeUrl.CLUSTER, "c", 1);
    upstream.put(TypeUrl.ENDPOINT, "c", 1);
    upstream.put(TypeUrl.ENDPOINT, "new", 1);
    InProcessCall<InputStream> call = proxy.sotw();
    call.receive(sotw(TypeUrl.CLUSTER, "").toByteArray());
    call.receive(sotw(TypeUrl.ENDPOINT, "", "c").toByteArray());
    Written.sotw(call);

    upstream.put(TypeUrl.CLUSTER, "new", 1);

    // Rule 24: the client asks for "new"'s assignment when it has the cluster; until then it is not
    // sent, and "c", unchanged, is not sent either.
    assertThat(Written.sotw(call)).extracting(Written::type).containsExactly("Cluster");
  }

  @Test
  void aDeltaClientsFirstRequestIsAnsweredWhenThereIsNothingToSend() throws Exception {
    upstream.put(TypeUrl.LISTENER, "l", 1);
    upstream.remove(TypeUrl.LISTENER, "l");
    InProcessCall<InputStream> call = proxy.delta();

    call.receive(delta(TypeUrl.LISTENER, "").toByteArray());

    // Rule 17: an Envoy starting against an empty Listener set waits for this answer.
    assertThat(Written.delta(call))
        .singleElement()
        .satisfies(
            sent -> {
              assertThat(sent.type()).isEqualTo("Listener");
              assertThat(sent.names()).isEmpty();
            });
  }

  @Test
  void aSotwClientAskingForAnAssignmentTheUpstreamLacksIsSentAnEmptyOneOnce() throws Exception {
    upstream.put(TypeUrl.ENDPOINT, "present", 1);
    InProcessCall<InputStream> call = proxy.sotw();

    call.receive(sotw(TypeUrl.ENDPOINT, "", "present", "missing").toByteArray());

    // Rule 21: the upstream answered for every assignment (a whole state here), so "missing" does
    // not exist; an Envoy warming its cluster is told so with an empty one, as istiod tells it.
    Written sent = Written.sotw(call).get(0);
    assertThat(sent.names()).containsExactlyInAnyOrder("present", "missing");
    call.receive(ack(TypeUrl.ENDPOINT, sent, "present", "missing").toByteArray());
    upstream.put(TypeUrl.ENDPOINT, "present", 2);
    assertThat(Written.sotw(call))
        .singleElement()
        .extracting(Written::names)
        .isEqualTo(List.of("present"));
  }

  @Test
  void aReconnectingDeltaClientWhoseClusterChangedGetsItsAssignmentThoughItClaimsItUnchanged()
      throws Exception {
    upstream.put(TypeUrl.CLUSTER, "c", 2);
    upstream.put(TypeUrl.ENDPOINT, "c", 1);
    InProcessCall<InputStream> call = proxy.delta();
    String heldAssignment = upstream.state(TypeUrl.ENDPOINT).get("c").version();

    // As an Envoy reconnects: it holds c at an older version, and c's assignment as it is now. The
    // Cluster response comes before the proxy reads its request for the assignment.
    call.receive(
        delta(TypeUrl.CLUSTER, "").toBuilder()
            .putInitialResourceVersions("c", "older")
            .build()
            .toByteArray());
    assertThat(Written.delta(call))
        .singleElement()
        .extracting(Written::names)
        .isEqualTo(List.of("c"));
    call.receive(
        delta(TypeUrl.ENDPOINT, "", "c").toBuilder()
            .putInitialResourceVersions("c", heldAssignment)
            .build()
            .toByteArray());

    // It warms c until an assignment comes: the claim does not excuse it.
    assertThat(Written.delta(call))
        .singleElement()
        .satisfies(
            sent -> {
              assertThat(sent.type()).isEqualTo("ClusterLoadAssignment");
              assertThat(sent.names()).containsExactly("c");
            });
  }
}
