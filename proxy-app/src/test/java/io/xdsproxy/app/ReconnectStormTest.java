package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.Counter;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.WorkLanes;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A reconnect storm does not delay updates to the clients already served: with a burst of newcomers
 * queued for their first state, an update from java-control-plane reaches an established client
 * before most of them are served ({@link WorkLanes}). Made deterministic by holding the proxy's
 * workers while the newcomers' first requests and the update queue up, then letting one go: what is
 * measured is the order the work is done in, not how fast. With one queue for everything (before
 * the lanes), the update came after 93 to all 100 of the newcomers; with the streams' own work in
 * the initial lane but gRPC's work for their calls (reading and parsing each request) in the change
 * lane, after 57 to 65; with that in the call's lane too ({@code StreamLane}), after 0 to 4 (gRPC's
 * method lookup of each newcomer's call was still change work). Since requests are read on the
 * event loop, each newcomer's first request is handled in the initial lane.
 */
class ReconnectStormTest {

  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final int NEWCOMERS = 100;

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @Test
  void anUpdateReachesAnEstablishedClientBeforeMostOfABurstOfNewcomersIsServed() throws Exception {
    ControlPlane controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot("fleet", Resources.clustersAt(1000, "1", "a", "b"));
    XdsProxy proxy = fixture.proxy(oneConnectionForAll(controlPlane));
    ManagedChannel connection = channel(proxy);
    List<String> arrivals = new CopyOnWriteArrayList<>();

    established(connection, () -> arrivals.add("update"));

    Held held =
        newcomersThenAnUpdateQueued(
            proxy,
            controlPlane,
            WorkLanes::initialQueued,
            () -> {
              // The storm: newcomers of the same group, each served from the cache, all at once,
              // on the established client's connection.
              newcomers(connection, response -> true, arrivals);
            });
    assertThat(servedBeforeTheUpdate(held, arrivals))
        .as(
            "newcomers served before the established client got the update, of %d queued before it",
            NEWCOMERS)
        .isLessThan(NEWCOMERS / 5);
  }

  /**
   * A newcomer's answer to its first state is a newcomer's work too: a SotW client's ACK of its
   * assignments names every cluster, and is read, parsed and compared as its request was. With the
   * stream moved to the change lane once its first state was written, a storm's ACKs were queued
   * ahead of the update, which reached the established client after all 100 of them; with the
   * stream a newcomer until its client answered, after none to a few. Each newcomer is sent the
   * update once its ACK is handled (its stream's executor runs one after the other), so how many
   * newcomers got the update before the established client tells how many ACKs were handled before
   * the update was written to it. (Counting the ACKs handled by the time the established client got
   * the update counted those handled while the update was on its way: 40 to 50 once an ACK was no
   * longer parsed on a worker.)
   */
  @Test
  void anUpdateReachesAnEstablishedClientBeforeMostOfTheNewcomersAnswersAreRead() throws Exception {
    ControlPlane controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot("fleet", Resources.clustersAt(1000, "1", "a", "b"));
    XdsProxy proxy = fixture.proxy(oneConnectionForAll(controlPlane));
    ManagedChannel connection = channel(proxy);
    Counter acks = clusterAcks(proxy);
    List<String> arrivals = new CopyOnWriteArrayList<>();
    established(connection, () -> arrivals.add("update"));

    List<Client> newcomers =
        newcomers(connection, response -> response.getResourcesCount() == 3, arrivals);
    List<DiscoveryResponse> firstStates = new ArrayList<>();
    for (Client newcomer : newcomers) {
      firstStates.add(newcomer.next());
    }
    await().atMost(WAIT).until(() -> acks.count() == 1); // the established client's

    Held held =
        newcomersThenAnUpdateQueued(
            proxy,
            controlPlane,
            WorkLanes::initialQueued,
            () -> {
              for (int i = 0; i < NEWCOMERS; i++) {
                newcomers.get(i).ack(firstStates.get(i));
              }
            });
    assertThat(servedBeforeTheUpdate(held, arrivals))
        .as(
            "newcomers whose ACK was handled before the established client got the update, of %d",
            NEWCOMERS)
        .isLessThan(NEWCOMERS / 5);
    assertThat(acks.count()).as("every ACK handled").isEqualTo(NEWCOMERS + 1);
  }

  /**
   * The first request of a type is a newcomer's work on a stream whose client holds the types it
   * asked for before: a gRPC client asks for the assignments of the clusters it was sent only after
   * it ACKed them, and an Envoy asks for its listeners once its clusters are warm. With those
   * requests handled in the lane of a stream that had answered everything it asked for so far (the
   * change lane), the update reached the established client after all 100 newcomers' assignments;
   * with them a newcomer's work, after one to three.
   */
  @Test
  void anUpdateReachesAnEstablishedClientBeforeMostOfTheNewcomersSecondTypeIsServed()
      throws Exception {
    ControlPlane controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot("fleet", Resources.clustersAt(1000, "1", "a", "b"));
    XdsProxy proxy = fixture.proxy(oneConnectionForAll(controlPlane));
    ManagedChannel connection = channel(proxy);
    List<String> arrivals = new CopyOnWriteArrayList<>();
    Client established = established(connection, () -> arrivals.add("update"));
    // The group holds the assignments: the newcomers are served them from the cache.
    established.askAssignments("a", "b");
    established.ack(established.next());

    List<Client> newcomers =
        newcomers(
            connection, response -> response.getTypeUrl().equals(TypeUrl.ENDPOINT.url()), arrivals);
    for (Client newcomer : newcomers) {
      newcomer.ack(newcomer.next());
    }
    Counter acks = clusterAcks(proxy);
    // Every newcomer holds the clusters and has said so: its stream left the initial lane.
    await().atMost(WAIT).until(() -> acks.count() == NEWCOMERS + 1);

    Held held =
        newcomersThenAnUpdateQueued(
            proxy,
            controlPlane,
            WorkLanes::initialQueued,
            () -> newcomers.forEach(newcomer -> newcomer.askAssignments("a", "b")));
    assertThat(servedBeforeTheUpdate(held, arrivals))
        .as(
            "newcomers sent their assignments before the established client got the update, of %d",
            NEWCOMERS)
        .isLessThan(NEWCOMERS / 5);
  }

  /**
   * An established client's ACK is handled where it is read, on its connection's event loop, even
   * while every worker is busy (a storm's newcomers, an update's fan-out): handing it to a worker
   * costs more than handling it. A request that asks for many names its stream did not ask for
   * before waits for a worker, in the change lane, as a newcomer's requests wait in the initial
   * lane.
   */
  @Test
  void anEstablishedClientsAckIsHandledWhileEveryWorkerIsBusy() throws Exception {
    ControlPlane controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot("fleet", Resources.clustersAt(1000, "1", "a", "b"));
    XdsProxy proxy = fixture.proxy(against(controlPlane.target()));
    Counter acks = clusterAcks(proxy);
    Counter requests =
        proxy
            .meters()
            .get("xds.downstream.requests")
            .tag("type", TypeUrl.CLUSTER.shortName())
            .counter();
    Client established = new Client(channel(proxy), response -> {});
    established.ask("established");
    DiscoveryResponse clusters = established.next();
    established.ack(clusters);
    await().atMost(WAIT).until(() -> acks.count() == 1);
    WorkLanes lanes = (WorkLanes) proxy.workers().getQueue();

    Held held = Held.everyWorker(proxy.workers());
    held.releaseAllAfter(
        () -> {
          try {
            established.ack(clusters); // the same ACK again, as a client may send it
            await().atMost(WAIT).until(() -> acks.count() == 2);

            int changeWork = lanes.changeQueued();
            List<String> named = new ArrayList<>();
            for (int i = 0; i < 2 * 16; i++) {
              named.add("cluster-" + i);
            }
            established.send(
                DiscoveryRequest.newBuilder()
                    .setTypeUrl(TypeUrl.CLUSTER.url())
                    .addAllResourceNames(named)
                    .setVersionInfo(clusters.getVersionInfo())
                    .setResponseNonce(clusters.getNonce())
                    .build());
            await().atMost(WAIT).until(() -> lanes.changeQueued() > changeWork);
            assertThat(requests.count())
                .as("the request that names clusters, waiting for a worker, is not handled yet")
                .isEqualTo(3);
          } finally {
            held.releaseOne();
          }
        });
    await().atMost(WAIT).until(() -> requests.count() == 4);
  }

  /**
   * The storm: {@link #NEWCOMERS} newcomers of the same group, each served from the cache, all at
   * once, on {@code storm}, one connection; each has asked for the clusters, and adds its name to
   * {@code arrivals} when it first gets a response that {@code counts}.
   */
  private static List<Client> newcomers(
      ManagedChannel storm, Predicate<DiscoveryResponse> counts, List<String> arrivals) {
    List<Client> newcomers = new ArrayList<>();
    for (int i = 0; i < NEWCOMERS; i++) {
      String name = "newcomer-" + i;
      AtomicBoolean arrived = new AtomicBoolean();
      Client newcomer =
          new Client(
              storm,
              response -> {
                if (counts.test(response) && arrived.compareAndSet(false, true)) {
                  arrivals.add(name);
                }
              });
      newcomer.ask(name);
      newcomers.add(newcomer);
    }
    return newcomers;
  }

  /** The proxy's count of the Cluster ACKs its clients sent. */
  private static Counter clusterAcks(XdsProxy proxy) {
    return proxy
        .meters()
        .get("xds.downstream.acks")
        .tag("type", TypeUrl.CLUSTER.shortName())
        .counter();
  }

  /** What the newcomers send while every worker is held. */
  private interface NewcomersSend {
    void send() throws Exception;
  }

  /**
   * Holds every worker while the newcomers send, until their work is queued in the initial lane
   * ({@code initialQueued}: one task per newcomer, the handling of what it sent), and then {@code
   * controlPlane} makes an update, whose upstream response is queued in the change lane; lets one
   * worker go once both are queued, the others only when the caller releases them, so that the
   * order the work is done in is the queues' alone.
   */
  private static Held newcomersThenAnUpdateQueued(
      XdsProxy proxy,
      ControlPlane controlPlane,
      ToIntFunction<WorkLanes> initialQueued,
      NewcomersSend newcomers)
      throws Exception {
    ThreadPoolExecutor workers = proxy.workers();
    WorkLanes lanes = (WorkLanes) workers.getQueue();
    Held held = Held.everyWorker(workers);
    try {
      newcomers.send();
      await().atMost(WAIT).until(() -> initialQueued.applyAsInt(lanes) >= NEWCOMERS);
      int changeWork = lanes.changeQueued();
      controlPlane.setSnapshot("fleet", Resources.clustersAt(1000, "2", "a", "b", "c"));
      await().atMost(WAIT).until(() -> lanes.changeQueued() > changeWork);
    } finally {
      held.releaseOne();
    }
    return held;
  }

  /**
   * How many of {@code arrivals} came before the update, once the one worker {@code held} let go
   * has served them all, the newcomers and the update.
   */
  private static int servedBeforeTheUpdate(Held held, List<String> arrivals) {
    held.releaseAllAfter(
        () ->
            await()
                .atMost(WAIT)
                .untilAsserted(() -> assertThat(arrivals).as("served").hasSize(NEWCOMERS + 1)));
    return arrivals.indexOf("update");
  }

  /**
   * A client of {@code proxy} that holds the clusters and has ACKed them; {@code onUpdate} runs
   * when it gets the update, which adds cluster c.
   */
  private Client established(ManagedChannel connection, Runnable onUpdate)
      throws InterruptedException {
    Client established =
        new Client(
            connection,
            response -> {
              if (response.getResourcesCount() == 3) {
                onUpdate.run();
              }
            });
    established.ask("established");
    established.ack(established.next());
    return established;
  }

  /**
   * The proxy against {@code controlPlane}, letting the established client and every newcomer share
   * one connection: the order the clients get what they get is then the order the proxy wrote it
   * in, on one connection's event loop, not two connections' race to their clients (which, on a
   * loaded machine, once let 41 newcomers' updates arrive before the established client's).
   */
  private static ProxyConfig oneConnectionForAll(ControlPlane controlPlane) {
    ProxyConfig config = against(controlPlane.target());
    return config.withLimits(config.limits().withMaxStreamsPerConnection(NEWCOMERS + 1));
  }

  private ManagedChannel channel(XdsProxy proxy) {
    return fixture
        .add(
            new AutoCloseableChannel(
                NettyChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort())
                    .usePlaintext()
                    .build()))
        .channel();
  }

  private static DiscoveryRequest wildcardClusters(String nodeId) {
    return DiscoveryRequest.newBuilder()
        .setNode(node(nodeId, "fleet"))
        .setTypeUrl(TypeUrl.CLUSTER.url())
        .build();
  }

  /**
   * A SotW ADS client of the Cluster type (and of assignments, once asked) that keeps what it
   * receives.
   */
  private static final class Client {
    private final BlockingQueue<DiscoveryResponse> received = new LinkedBlockingQueue<>();
    private final StreamObserver<DiscoveryRequest> requests;
    private List<String> assignments = List.of();

    Client(ManagedChannel channel, java.util.function.Consumer<DiscoveryResponse> onResponse) {
      requests =
          AggregatedDiscoveryServiceGrpc.newStub(channel)
              .streamAggregatedResources(
                  new StreamObserver<>() {
                    @Override
                    public void onNext(DiscoveryResponse response) {
                      onResponse.accept(response);
                      received.add(response);
                    }

                    @Override
                    public void onError(Throwable t) {}

                    @Override
                    public void onCompleted() {}
                  });
    }

    void ask(String nodeId) {
      requests.onNext(wildcardClusters(nodeId));
    }

    DiscoveryResponse next() throws InterruptedException {
      DiscoveryResponse response = received.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
      assertThat(response).as("a response").isNotNull();
      return response;
    }

    void send(DiscoveryRequest request) {
      requests.onNext(request);
    }

    /** Asks for the assignments of {@code clusters}, after the clusters. */
    void askAssignments(String... clusters) {
      assignments = List.of(clusters);
      requests.onNext(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addAllResourceNames(assignments)
              .build());
    }

    /** ACKs {@code response}, naming what the client asks for of its type (SotW). */
    void ack(DiscoveryResponse response) {
      requests.onNext(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(response.getTypeUrl())
              .addAllResourceNames(
                  response.getTypeUrl().equals(TypeUrl.ENDPOINT.url()) ? assignments : List.of())
              .setVersionInfo(response.getVersionInfo())
              .setResponseNonce(response.getNonce())
              .build());
    }
  }

  /**
   * Every worker of the pool held by a task of the test's, so that the order queued work is done in
   * is the queue's alone: one is let go first, the others at the end.
   */
  private record Held(CountDownLatch one, CountDownLatch others) {
    static Held everyWorker(ThreadPoolExecutor workers) throws InterruptedException {
      Held held = new Held(new CountDownLatch(1), new CountDownLatch(1));
      CountDownLatch holding = new CountDownLatch(workers.getCorePoolSize());
      for (int i = 0; i < workers.getCorePoolSize(); i++) {
        CountDownLatch until = i == 0 ? held.one : held.others;
        workers.execute(
            () -> {
              holding.countDown();
              try {
                until.await(WAIT.toSeconds(), TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
      }
      assertThat(holding.await(WAIT.toSeconds(), TimeUnit.SECONDS))
          .as("every worker held")
          .isTrue();
      return held;
    }

    void releaseOne() {
      one.countDown();
    }

    /** Runs {@code wait} with the one worker let go, then lets the others go, whatever it did. */
    void releaseAllAfter(Runnable wait) {
      try {
        wait.run();
      } finally {
        others.countDown();
      }
    }
  }

  /** A channel closed with the fixture's clients. */
  private record AutoCloseableChannel(ManagedChannel channel) implements AutoCloseable {
    @Override
    public void close() {
      channel.shutdownNow();
    }
  }
}
