package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.core.TypeUrl;
import java.util.ArrayList;
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

  /** One written response: its type's simple name, its nonce, version and the names it carries. */
  private record Sent(String type, String nonce, String version, List<String> names) {}

  private static List<Sent> sotwWritten(InProcessCall<DiscoveryRequest> call)
      throws InvalidProtocolBufferException {
    List<Sent> sent = new ArrayList<>();
    for (byte[] bytes : call.takeWritten()) {
      DiscoveryResponse response = DiscoveryResponse.parseFrom(bytes);
      List<String> names = new ArrayList<>();
      for (var any : response.getResourcesList()) {
        names.add(
            any.is(Cluster.class)
                ? any.unpack(Cluster.class).getName()
                : any.unpack(ClusterLoadAssignment.class).getClusterName());
      }
      sent.add(
          new Sent(
              simpleName(response.getTypeUrl()),
              response.getNonce(),
              response.getVersionInfo(),
              names));
    }
    return sent;
  }

  private static List<Sent> deltaWritten(InProcessCall<DeltaDiscoveryRequest> call)
      throws InvalidProtocolBufferException {
    List<Sent> sent = new ArrayList<>();
    for (byte[] bytes : call.takeWritten()) {
      DeltaDiscoveryResponse response = DeltaDiscoveryResponse.parseFrom(bytes);
      List<String> names = new ArrayList<>();
      response.getResourcesList().forEach(resource -> names.add(resource.getName()));
      sent.add(new Sent(simpleName(response.getTypeUrl()), response.getNonce(), "", names));
    }
    return sent;
  }

  private static String simpleName(String typeUrl) {
    return typeUrl.substring(typeUrl.lastIndexOf('.') + 1);
  }

  private static DiscoveryRequest sotw(TypeUrl type, String nonce, String... names) {
    return ClientRequests.sotw(NODE, type, nonce, names);
  }

  /** The SotW ACK of {@code response}: its nonce and version, the names asked for. */
  private static DiscoveryRequest ack(TypeUrl type, Sent response, String... names) {
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
    InProcessCall<DiscoveryRequest> call = proxy.sotw();
    call.receive(sotw(TypeUrl.CLUSTER, "").toByteArray());
    Sent clusters = sotwWritten(call).get(0);
    call.receive(ack(TypeUrl.CLUSTER, clusters).toByteArray());
    call.receive(sotw(TypeUrl.ENDPOINT, "", "c", "d").toByteArray());
    Sent endpoints = sotwWritten(call).get(0);
    call.receive(ack(TypeUrl.ENDPOINT, endpoints, "c", "d").toByteArray());

    upstream.put(TypeUrl.CLUSTER, "c", 2);

    List<Sent> sent = sotwWritten(call);
    assertThat(sent).extracting(Sent::type).containsExactly("Cluster", "ClusterLoadAssignment");
    assertThat(sent.get(0).names()).containsExactlyInAnyOrder("c", "d");
    assertThat(sent.get(1).names())
        .as("the changed cluster's assignment, unchanged; not d's")
        .containsExactly("c");
    // Envoy's warming request repeats its last EDS request (its nonce stale now), and its ACKs
    // follow: none is answered again.
    call.receive(ack(TypeUrl.ENDPOINT, endpoints, "c", "d").toByteArray());
    call.receive(ack(TypeUrl.ENDPOINT, sent.get(1), "c", "d").toByteArray());
    call.receive(ack(TypeUrl.CLUSTER, sent.get(0)).toByteArray());
    assertThat(sotwWritten(call)).as("no loop").isEmpty();
  }

  @Test
  void aDeltaClientIsSentTheUnchangedAssignmentOfAChangedClusterUnasked() throws Exception {
    upstream.put(TypeUrl.CLUSTER, "c", 1);
    upstream.put(TypeUrl.ENDPOINT, "c", 1);
    InProcessCall<DeltaDiscoveryRequest> call = proxy.delta();
    call.receive(delta(TypeUrl.CLUSTER, "").toByteArray());
    String clusterNonce = deltaWritten(call).get(0).nonce();
    call.receive(delta(TypeUrl.ENDPOINT, "", "c").toByteArray());
    String endpointNonce = deltaWritten(call).get(0).nonce();
    call.receive(delta(TypeUrl.ENDPOINT, endpointNonce).toByteArray());
    call.receive(delta(TypeUrl.CLUSTER, clusterNonce).toByteArray());

    upstream.put(TypeUrl.CLUSTER, "c", 2);

    List<Sent> sent = deltaWritten(call);
    assertThat(sent).extracting(Sent::type).containsExactly("Cluster", "ClusterLoadAssignment");
    assertThat(sent.get(1).names()).containsExactly("c");
    call.receive(delta(TypeUrl.ENDPOINT, sent.get(1).nonce()).toByteArray());
    assertThat(deltaWritten(call)).as("no loop").isEmpty();
  }

  @Test
  void anAssignmentTheClientHasNotSubscribedToIsNotSentWithItsCluster() throws Exception {
    upstream.put(TypeUrl.CLUSTER, "c", 1);
    upstream.put(TypeUrl.ENDPOINT, "c", 1);
    upstream.put(TypeUrl.ENDPOINT, "new", 1);
    InProcessCall<DiscoveryRequest> call = proxy.sotw();
    call.receive(sotw(TypeUrl.CLUSTER, "").toByteArray());
    call.receive(sotw(TypeUrl.ENDPOINT, "", "c").toByteArray());
    sotwWritten(call);

    upstream.put(TypeUrl.CLUSTER, "new", 1);

    // Rule 24: the client asks for "new"'s assignment when it has the cluster; until then it is not
    // sent, and "c", unchanged, is not sent either.
    assertThat(sotwWritten(call)).extracting(Sent::type).containsExactly("Cluster");
  }

  @Test
  void aDeltaClientsFirstRequestIsAnsweredWhenThereIsNothingToSend() throws Exception {
    upstream.put(TypeUrl.LISTENER, "l", 1);
    upstream.remove(TypeUrl.LISTENER, "l");
    InProcessCall<DeltaDiscoveryRequest> call = proxy.delta();

    call.receive(delta(TypeUrl.LISTENER, "").toByteArray());

    // Rule 17: an Envoy starting against an empty Listener set waits for this answer.
    assertThat(deltaWritten(call))
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
    InProcessCall<DiscoveryRequest> call = proxy.sotw();

    call.receive(sotw(TypeUrl.ENDPOINT, "", "present", "missing").toByteArray());

    // Rule 21: the upstream answered for every assignment (a whole state here), so "missing" does
    // not exist; an Envoy warming its cluster is told so with an empty one, as istiod tells it.
    Sent sent = sotwWritten(call).get(0);
    assertThat(sent.names()).containsExactlyInAnyOrder("present", "missing");
    call.receive(ack(TypeUrl.ENDPOINT, sent, "present", "missing").toByteArray());
    upstream.put(TypeUrl.ENDPOINT, "present", 2);
    assertThat(sotwWritten(call))
        .singleElement()
        .extracting(Sent::names)
        .isEqualTo(List.of("present"));
  }

  @Test
  void aReconnectingDeltaClientWhoseClusterChangedGetsItsAssignmentThoughItClaimsItUnchanged()
      throws Exception {
    upstream.put(TypeUrl.CLUSTER, "c", 2);
    upstream.put(TypeUrl.ENDPOINT, "c", 1);
    InProcessCall<DeltaDiscoveryRequest> call = proxy.delta();
    String heldAssignment = upstream.state(TypeUrl.ENDPOINT).get("c").version();

    // As an Envoy reconnects: it holds c at an older version, and c's assignment as it is now. The
    // Cluster response comes before the proxy reads its request for the assignment.
    call.receive(
        delta(TypeUrl.CLUSTER, "").toBuilder()
            .putInitialResourceVersions("c", "older")
            .build()
            .toByteArray());
    assertThat(deltaWritten(call)).singleElement().extracting(Sent::names).isEqualTo(List.of("c"));
    call.receive(
        delta(TypeUrl.ENDPOINT, "", "c").toBuilder()
            .putInitialResourceVersions("c", heldAssignment)
            .build()
            .toByteArray());

    // It warms c until an assignment comes: the claim does not excuse it.
    assertThat(deltaWritten(call))
        .singleElement()
        .satisfies(
            sent -> {
              assertThat(sent.type()).isEqualTo("ClusterLoadAssignment");
              assertThat(sent.names()).containsExactly("c");
            });
  }
}
