package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.TypeUrl;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A client's request handled after an update reached its group but before the stream pushed it (an
 * ACK read just as the update came): the update still goes make-before-break, every type's
 * additions before any type's removals, and the request's own type does not jump the push order.
 * The proxy's tasks are queued, and run in the order of the race.
 */
class RequestRacingAnUpdateTest {

  private static final Node NODE = Node.newBuilder().setId("envoy-1").setCluster("fleet").build();

  private final Deque<Runnable> queued = new ArrayDeque<>();
  private final MemoryUpstream upstream = new MemoryUpstream();
  private final InProcessProxy proxy = new InProcessProxy(upstream, Limits.DEFAULTS, queued::add);

  @AfterEach
  void close() {
    proxy.close();
  }

  /** One written response: its type's simple name, its nonce, what it adds and what it removes. */
  private record Sent(String type, String nonce, List<String> added, List<String> removed) {}

  private void runQueued() {
    for (Runnable task; (task = queued.poll()) != null; ) {
      task.run();
    }
  }

  private List<Sent> written(InProcessCall<DeltaDiscoveryRequest> call)
      throws InvalidProtocolBufferException {
    List<Sent> sent = new ArrayList<>();
    for (byte[] bytes : call.takeWritten()) {
      DeltaDiscoveryResponse response = DeltaDiscoveryResponse.parseFrom(bytes);
      String type = response.getTypeUrl();
      sent.add(
          new Sent(
              type.substring(type.lastIndexOf('.') + 1),
              response.getNonce(),
              response.getResourcesList().stream().map(Resource::getName).sorted().toList(),
              response.getRemovedResourcesList().stream().sorted().toList()));
    }
    return sent;
  }

  private static byte[] request(TypeUrl type, String nonce, String... subscribe) {
    return DeltaDiscoveryRequest.newBuilder()
        .setNode(NODE)
        .setTypeUrl(type.url())
        .setResponseNonce(nonce)
        .addAllResourceNamesSubscribe(List.of(subscribe))
        .build()
        .toByteArray();
  }

  @Test
  void anAckHandledBeforeAPendingUpdateLetsTheUpdateGoFirstMakeBeforeBreak() throws Exception {
    upstream.put(TypeUrl.CLUSTER, "a", 1);
    upstream.put(TypeUrl.CLUSTER, "b", 1);
    upstream.put(TypeUrl.ROUTE, "r", 1);
    InProcessCall<DeltaDiscoveryRequest> call = proxy.delta();
    call.receive(request(TypeUrl.CLUSTER, "", "*"));
    runQueued();
    Sent clusters = written(call).get(0);
    call.receive(request(TypeUrl.CLUSTER, clusters.nonce()));
    runQueued();
    call.receive(request(TypeUrl.ROUTE, "", "r"));
    runQueued();
    Sent routes = written(call).get(0);
    assertThat(routes.added()).containsExactly("r");

    // The route's ACK is read; before the stream handles it, the control plane moves the route
    // from cluster b to a new cluster b2 and takes b away, and the group takes it all in.
    call.receive(request(TypeUrl.ROUTE, routes.nonce()));
    Runnable ackRead = queued.poll();
    upstream.put(TypeUrl.CLUSTER, "b2", 1);
    upstream.put(TypeUrl.ROUTE, "r", 2);
    upstream.remove(TypeUrl.CLUSTER, "b");
    runQueued();
    assertThat(call.takeWritten()).as("the stream is busy with the ACK").isEmpty();
    ackRead.run();
    runQueued();

    assertThat(written(call))
        .containsExactly(
            new Sent("Cluster", "3", List.of("b2"), List.of()),
            new Sent("RouteConfiguration", "4", List.of("r"), List.of()),
            new Sent("Cluster", "5", List.of(), List.of("b")));
  }
}
