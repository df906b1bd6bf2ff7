package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.TypeUrl;
import java.io.InputStream;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A client's request handled after an update reached its group but before the stream pushed it (an
 * ACK read just as the update came): the update still goes make-before-break, every type's
 * additions before any type's removals, and the request's own type does not jump the push order;
 * for a Delta client and a SotW one. The proxy's tasks are queued, and run in the order of the
 * race.
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

  private void runQueued() {
    for (Runnable task; (task = queued.poll()) != null; ) {
      task.run();
    }
  }

  /**
   * The client's ACK of route r was read and waits for its stream (the one task queued); before it
   * is handled, the control plane moves the route from cluster b to a new cluster b2 and takes b
   * away, and the group takes it all in. Then the ACK is handled, and what follows runs.
   */
  private void routeMovesToANewClusterBeforeTheAckIsHandled(InProcessCall<?> call) {
    changedBeforeTheAckIsHandled(
        call,
        () -> {
          upstream.put(TypeUrl.CLUSTER, "b2", 1);
          upstream.put(TypeUrl.ROUTE, "r", 2);
          upstream.remove(TypeUrl.CLUSTER, "b");
        });
  }

  /**
   * The ACK read waits for its stream (the one task queued) while {@code change} reaches the
   * upstream and the group takes it in; then the ACK is handled, and what follows runs.
   */
  private void changedBeforeTheAckIsHandled(InProcessCall<?> call, Runnable change) {
    Runnable ackRead = queued.poll();
    change.run();
    runQueued();
    assertThat(call.takeWritten()).as("the stream is busy with the ACK").isEmpty();
    ackRead.run();
    runQueued();
  }

  /** A SotW client on {@code call} asks for every cluster and ACKs the answer; the ACK is read. */
  private void sotwClustersAcked(InProcessCall<InputStream> call) throws Exception {
    call.receive(ClientRequests.sotw(NODE, TypeUrl.CLUSTER, "").toByteArray());
    runQueued();
    Written clusters = Written.sotw(call).get(0);
    call.receive(
        ClientRequests.sotw(NODE, TypeUrl.CLUSTER, clusters.nonce()).toBuilder()
            .setVersionInfo(clusters.version())
            .build()
            .toByteArray());
  }

  /** A Delta client on {@code call} asks for every cluster and ACKs the answer; the ACK is read. */
  private void deltaClustersAcked(InProcessCall<InputStream> call) throws Exception {
    call.receive(ClientRequests.delta(NODE, TypeUrl.CLUSTER, "", "*").toByteArray());
    runQueued();
    Written clusters = Written.delta(call).get(0);
    call.receive(ClientRequests.delta(NODE, TypeUrl.CLUSTER, clusters.nonce()).toByteArray());
  }

  /** Clusters a and b, and route r. */
  private void clustersAndARoute() {
    upstream.put(TypeUrl.CLUSTER, "a", 1);
    upstream.put(TypeUrl.CLUSTER, "b", 1);
    upstream.put(TypeUrl.ROUTE, "r", 1);
  }

  @Test
  void aDeltaAckHandledBeforeAPendingUpdateLetsTheUpdateGoFirstMakeBeforeBreak() throws Exception {
    clustersAndARoute();
    InProcessCall<InputStream> call = proxy.delta();
    deltaClustersAcked(call);
    runQueued();
    call.receive(ClientRequests.delta(NODE, TypeUrl.ROUTE, "", "r").toByteArray());
    runQueued();
    Written routes = Written.delta(call).get(0);
    assertThat(routes.names()).containsExactly("r");

    call.receive(ClientRequests.delta(NODE, TypeUrl.ROUTE, routes.nonce()).toByteArray());
    routeMovesToANewClusterBeforeTheAckIsHandled(call);

    assertThat(Written.delta(call))
        .containsExactly(
            new Written("Cluster", "3", "", List.of("b2"), List.of()),
            new Written("RouteConfiguration", "4", "", List.of("r"), List.of()),
            new Written("Cluster", "5", "", List.of(), List.of("b")));
  }

  @Test
  void aSotwAckHandledBeforeAPendingUpdateLetsTheUpdateGoFirstMakeBeforeBreak() throws Exception {
    clustersAndARoute();
    InProcessCall<InputStream> call = proxy.sotw();
    sotwClustersAcked(call);
    runQueued();
    call.receive(ClientRequests.sotw(NODE, TypeUrl.ROUTE, "", "r").toByteArray());
    runQueued();
    Written routes = Written.sotw(call).get(0);
    assertThat(routes.names()).containsExactly("r");

    call.receive(
        ClientRequests.sotw(NODE, TypeUrl.ROUTE, routes.nonce(), "r").toBuilder()
            .setVersionInfo(routes.version())
            .build()
            .toByteArray());
    routeMovesToANewClusterBeforeTheAckIsHandled(call);

    // SotW sends a type's whole state: b goes in a later response than b2 does.
    assertThat(Written.sotw(call))
        .extracting(Written::type, written -> written.names().stream().sorted().toList())
        .containsExactly(
            tuple("Cluster", List.of("a", "b", "b2")),
            tuple("RouteConfiguration", List.of("r")),
            tuple("Cluster", List.of("a", "b2")));
  }

  /**
   * The control plane adds cluster c and takes b away while the client's ACK of its clusters waits:
   * the ACK's own type is the only one that changed, and it still goes make-before-break, as a push
   * of the same update does. Found in CI, where the ACK of a SotW client sometimes came after the
   * update, and the client was sent one response with b gone where it is otherwise sent two.
   */
  private void clustersChangeBeforeTheAckIsHandled(InProcessCall<?> call) {
    changedBeforeTheAckIsHandled(
        call,
        () -> {
          upstream.put(TypeUrl.CLUSTER, "c", 1);
          upstream.remove(TypeUrl.CLUSTER, "b");
        });
  }

  @Test
  void aSotwAckOfTheOnlyTypeThatChangedLetsTheUpdateGoMakeBeforeBreak() throws Exception {
    upstream.put(TypeUrl.CLUSTER, "a", 1);
    upstream.put(TypeUrl.CLUSTER, "b", 1);
    InProcessCall<InputStream> call = proxy.sotw();
    sotwClustersAcked(call);
    clustersChangeBeforeTheAckIsHandled(call);

    assertThat(Written.sotw(call))
        .extracting(Written::type, written -> written.names().stream().sorted().toList())
        .containsExactly(
            tuple("Cluster", List.of("a", "b", "c")), tuple("Cluster", List.of("a", "c")));
  }

  @Test
  void aDeltaAckOfTheOnlyTypeThatChangedLetsTheUpdateGoMakeBeforeBreak() throws Exception {
    upstream.put(TypeUrl.CLUSTER, "a", 1);
    upstream.put(TypeUrl.CLUSTER, "b", 1);
    InProcessCall<InputStream> call = proxy.delta();
    deltaClustersAcked(call);
    clustersChangeBeforeTheAckIsHandled(call);

    assertThat(Written.delta(call))
        .containsExactly(
            new Written("Cluster", "2", "", List.of("c"), List.of()),
            new Written("Cluster", "3", "", List.of(), List.of("b")));
  }
}
