package io.xdsproxy.upstream.testing;

import static io.xdsproxy.upstream.testing.IstiodConfig.CLUSTER_TYPE;
import static io.xdsproxy.upstream.testing.IstiodConfig.ENDPOINT_TYPE;
import static io.xdsproxy.upstream.testing.IstiodConfig.LISTENER_TYPE;
import static io.xdsproxy.upstream.testing.IstiodConfig.ROUTE_TYPE;
import static io.xdsproxy.upstream.testing.IstiodConfig.SECRET_TYPE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.BoolValue;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.AggregatedConfigSource;
import io.envoyproxy.envoy.config.core.v3.ConfigSource;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.Secret;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.testing.Assignments;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * {@link IstiodModel} over the wire: each of istiod's answering rules it models, shown with a raw
 * ADS client on loopback sending the requests and reading what comes back (or that nothing does).
 */
@Execution(ExecutionMode.CONCURRENT)
class IstiodModelTest {

  private static final Duration RESPONSE_WAIT = Duration.ofSeconds(5);

  /** How long "no response" is watched for: istiod answers a request at once or not at all. */
  private static final Duration QUIET = Duration.ofMillis(300);

  private static final String GROUP = "mesh";
  private static final Node NODE = Node.newBuilder().setId("sidecar-1").setCluster(GROUP).build();

  private IstiodModel istiod;
  private final List<ManagedChannel> channels = new ArrayList<>();

  @BeforeEach
  void startIstiod() throws Exception {
    istiod = new IstiodModel();
    istiod.setSnapshot(
        GROUP,
        snapshot(
            List.of(cluster("c1"), cluster("c2")),
            List.of(endpoints("c1", 8001), endpoints("c2", 8002)),
            List.of(listener("l1"), listener("l2")),
            List.of(route("r1")),
            List.of(secret("s1"))));
  }

  @AfterEach
  void stopIstiod() {
    channels.forEach(ManagedChannel::shutdownNow);
    istiod.close();
  }

  // ---- Stream set-up (pkg/xds/server.go Receive) ----

  @Test
  void aFirstRequestWithoutANodeIdEndsTheStreamWithInvalidArgument() {
    SotwStream noNode = new SotwStream(null);
    noNode.ask(CLUSTER_TYPE);
    noNode.endsWith(Status.Code.INVALID_ARGUMENT, "missing node information");

    SotwStream emptyId = new SotwStream(Node.newBuilder().setCluster(GROUP).build());
    emptyId.ask(CLUSTER_TYPE);
    emptyId.endsWith(Status.Code.INVALID_ARGUMENT, "missing node information");

    DeltaStream deltaNoNode = new DeltaStream(null);
    deltaNoNode.subscribe(CLUSTER_TYPE);
    deltaNoNode.endsWith(Status.Code.INVALID_ARGUMENT, "missing node information");
  }

  @Test
  void laterRequestsMayLeaveTheNodeOut() {
    SotwStream stream = new SotwStream();
    stream.ask(CLUSTER_TYPE);
    stream.next();
    stream.send(
        DiscoveryRequest.newBuilder().setTypeUrl(ENDPOINT_TYPE).addResourceNames("c1").build());

    assertThat(names(stream.next())).containsExactly("c1");
  }

  // ---- SotW: ShouldRespond (pkg/xds/server.go) ----

  @Test
  void aNackGetsNoResponseAndTheNamesItCarriesAreNotApplied() {
    SotwStream stream = new SotwStream();
    stream.ask(ENDPOINT_TYPE, "c1");
    DiscoveryResponse first = stream.next();

    stream.send(nack(first, "c1", "c2"));
    stream.nothingArrives();

    // Had the NACK's names been applied, this would be an ACK of [c1, c2] and get nothing.
    stream.send(ack(first, "c1", "c2"));
    assertThat(names(stream.next())).containsExactly("c2");
  }

  @Test
  void noNamesForAnEdsWatchUnsubscribeItWithoutAResponse() {
    SotwStream stream = new SotwStream();
    stream.ask(ENDPOINT_TYPE, "c1");
    DiscoveryResponse first = stream.next();

    stream.send(ack(first));
    stream.nothingArrives();
    istiod.setSnapshot(GROUP, defaultSnapshotWith(endpoints("c1", 9001)));
    stream.nothingArrives();

    // The watch is gone, so even a request with a nonce starts a new one, and is answered.
    stream.send(ack(first, "c1"));
    assertThat(names(stream.next())).containsExactly("c1");
  }

  @Test
  void anEmptyNonceIsAnInitAndGetsEverythingItAsksFor() {
    SotwStream stream = new SotwStream();
    stream.ask(ENDPOINT_TYPE, "c1");
    DiscoveryResponse first = stream.next();

    stream.send(request(ENDPOINT_TYPE, first.getVersionInfo(), "", "c1", "c2"));

    assertThat(names(stream.next())).containsExactly("c1", "c2");
  }

  @Test
  void aRequestWithAnExpiredNonceIsIgnored() {
    SotwStream stream = new SotwStream();
    stream.ask(ENDPOINT_TYPE, "c1");
    DiscoveryResponse first = stream.next();
    istiod.setSnapshot(GROUP, defaultSnapshotWith(endpoints("c1", 9001)));
    stream.next();

    stream.send(ack(first, "c1", "c2"));

    stream.nothingArrives();
  }

  @Test
  void aCurrentNonceWithAnEmptyVersionIsAnAckAndGetsNoResponse() {
    SotwStream stream = new SotwStream();
    stream.ask(CLUSTER_TYPE);
    DiscoveryResponse clusters = stream.next();
    stream.ask(ENDPOINT_TYPE, "c1");
    DiscoveryResponse endpoints = stream.next();

    stream.send(request(CLUSTER_TYPE, "", clusters.getNonce()));
    stream.send(request(ENDPOINT_TYPE, "", endpoints.getNonce(), "c1"));

    stream.nothingArrives();
  }

  @Test
  void namesAddedOnTheCurrentNonceGetOnlyTheAddedNamesWhileTheWatchKeepsThemAll() {
    SotwStream stream = new SotwStream();
    stream.ask(ENDPOINT_TYPE, "c1");
    DiscoveryResponse first = stream.next();

    stream.send(ack(first, "c1", "c2"));
    DiscoveryResponse added = stream.next();
    assertThat(names(added)).containsExactly("c2");

    stream.send(ack(added, "c1", "c2"));
    istiod.setSnapshot(GROUP, defaultSnapshotWith(cluster("c3")));
    assertThat(names(stream.next())).containsExactly("c1", "c2");
  }

  @Test
  void onlyRemovingNamesFromANonWildcardWatchGetsNoResponse() {
    SotwStream stream = new SotwStream();
    stream.ask(ENDPOINT_TYPE, "c1", "c2");
    DiscoveryResponse first = stream.next();

    stream.send(ack(first, "c1"));

    stream.nothingArrives();
  }

  @Test
  void wildcardTypesGetEverythingWhateverNamesAreSent() {
    SotwStream stream = new SotwStream();
    stream.ask(CLUSTER_TYPE, "c1");
    DiscoveryResponse clusters = stream.next();
    assertThat(names(clusters)).containsExactly("c1", "c2");
    stream.ask(LISTENER_TYPE, "no-such-listener");
    assertThat(names(stream.next())).containsExactly("l1", "l2");

    // Dropping a name of a wildcard type is a change, and it is answered with everything.
    stream.send(ack(clusters));
    assertThat(names(stream.next())).containsExactly("c1", "c2");
  }

  @Test
  void aClusterInitArmsTheEdsWatchToAnswerItsNextAckOnce() {
    SotwStream stream = new SotwStream();
    stream.ask(ENDPOINT_TYPE, "c1");
    DiscoveryResponse endpoints = stream.next();
    stream.ask(CLUSTER_TYPE);
    stream.next();

    stream.send(ack(endpoints, "c1"));
    DiscoveryResponse forced = stream.next();
    assertThat(names(forced)).containsExactly("c1");

    stream.send(ack(forced, "c1"));
    stream.nothingArrives();
  }

  @Test
  void unknownEdsAndRdsNamesGetEmptyResourcesAndUnknownSecretsNothing() throws Exception {
    SotwStream stream = new SotwStream();
    stream.ask(ENDPOINT_TYPE, "no-such-cluster");
    assertThat(stream.next().getResources(0).unpack(ClusterLoadAssignment.class))
        .isEqualTo(ClusterLoadAssignment.newBuilder().setClusterName("no-such-cluster").build());

    stream.ask(ROUTE_TYPE, "no-such-route");
    assertThat(stream.next().getResources(0).unpack(RouteConfiguration.class))
        .isEqualTo(
            RouteConfiguration.newBuilder()
                .setName("no-such-route")
                .setValidateClusters(BoolValue.of(false))
                .build());

    stream.ask(SECRET_TYPE, "no-such-secret");
    stream.nothingArrives();
  }

  // ---- Pushes (ads.go pushConnection, xdsgen.go pushXds) ----

  @Test
  void anEndpointOnlyChangePushesOnlyTheChangedAssignmentsToStreamsWatchingThem() {
    SotwStream watchingBoth = new SotwStream();
    watchingBoth.ask(CLUSTER_TYPE);
    watchingBoth.next();
    watchingBoth.ask(ENDPOINT_TYPE, "c1", "c2");
    watchingBoth.next();
    SotwStream watchingC2 = new SotwStream();
    watchingC2.ask(ENDPOINT_TYPE, "c2");
    watchingC2.next();

    istiod.setSnapshot(GROUP, defaultSnapshotWith(endpoints("c1", 9001)));

    DiscoveryResponse pushed = watchingBoth.next();
    assertThat(pushed.getTypeUrl()).isEqualTo(ENDPOINT_TYPE);
    assertThat(names(pushed)).containsExactly("c1");
    watchingBoth.nothingArrives();
    watchingC2.nothingArrives();
  }

  @Test
  void aClusterChangePushesClustersThenEveryWatchedAssignmentUnderOnePushVersion() {
    SotwStream stream = watchingEverything();

    istiod.setSnapshot(GROUP, defaultSnapshotWith(cluster("c3")));

    DiscoveryResponse clusters = stream.next();
    DiscoveryResponse endpoints = stream.next();
    assertThat(List.of(clusters.getTypeUrl(), endpoints.getTypeUrl()))
        .containsExactly(CLUSTER_TYPE, ENDPOINT_TYPE);
    assertThat(names(clusters)).containsExactly("c1", "c2", "c3");
    assertThat(names(endpoints)).containsExactly("c1", "c2");
    assertThat(endpoints.getVersionInfo()).isEqualTo(clusters.getVersionInfo());
    assertThat(List.of(clusters.getNonce(), endpoints.getNonce()))
        .allMatch(nonce -> nonce.startsWith(clusters.getVersionInfo()))
        .doesNotHaveDuplicates();
    stream.nothingArrives();
  }

  @Test
  void listenerAndRouteChangesPushTheirOwnTypesInPushOrder() {
    SotwStream stream = watchingEverything();

    istiod.setSnapshot(
        GROUP,
        snapshot(
            List.of(cluster("c1"), cluster("c2")),
            List.of(endpoints("c1", 8001), endpoints("c2", 8002)),
            List.of(listener("l1")),
            List.of(
                route("r1").toBuilder()
                    .addVirtualHosts(VirtualHost.newBuilder().setName("more"))
                    .build()),
            List.of(secret("s1"))));

    DiscoveryResponse listeners = stream.next();
    DiscoveryResponse routes = stream.next();
    assertThat(List.of(listeners.getTypeUrl(), routes.getTypeUrl()))
        .containsExactly(LISTENER_TYPE, ROUTE_TYPE);
    assertThat(names(listeners)).containsExactly("l1");
    assertThat(names(routes)).containsExactly("r1");
    assertThat(routes.getVersionInfo()).isEqualTo(listeners.getVersionInfo());
    stream.nothingArrives();
  }

  @Test
  void anEndpointOnlyPushLeavesLaterAnswersOnThePreviousPushVersion() {
    SotwStream stream = new SotwStream();
    stream.ask(ENDPOINT_TYPE, "c1");
    DiscoveryResponse first = stream.next();

    istiod.setSnapshot(GROUP, defaultSnapshotWith(endpoints("c1", 9001)));
    DiscoveryResponse pushed = stream.next();
    assertThat(pushed.getVersionInfo()).isNotEqualTo(first.getVersionInfo());

    stream.send(ack(pushed, "c1", "c2"));
    assertThat(stream.next().getVersionInfo()).isEqualTo(first.getVersionInfo());
  }

  @Test
  void aChangeOfAnotherGroupIsNotPushed() {
    SotwStream other =
        new SotwStream(Node.newBuilder().setId("sidecar-2").setCluster("other").build());
    other.ask(CLUSTER_TYPE);
    assertThat(names(other.next())).isEmpty();

    istiod.setSnapshot(GROUP, defaultSnapshotWith(cluster("c3")));

    other.nothingArrives();
  }

  @Test
  void doNotCacheResourcesGoOutInAResourceWrapperMarkedDoNotCache() throws Exception {
    SotwStream sotw = new SotwStream();
    sotw.ask(CLUSTER_TYPE);
    sotw.next();
    DeltaStream delta = new DeltaStream();
    delta.subscribe(CLUSTER_TYPE);
    delta.next();

    istiod.setDoNotCache(Set.of("c1"));
    istiod.setSnapshot(GROUP, defaultSnapshotWith(cluster("c3")));

    List<Any> sotwClusters = sotw.next().getResourcesList();
    assertThat(sotwClusters.get(0).is(Resource.class)).isTrue();
    Resource wrapped = sotwClusters.get(0).unpack(Resource.class);
    assertThat(wrapped.getName()).isEqualTo("c1");
    assertThat(wrapped.getCacheControl().getDoNotCache()).isTrue();
    assertThat(wrapped.getResource().unpack(Cluster.class)).isEqualTo(cluster("c1"));
    assertThat(sotwClusters.get(1).is(Cluster.class)).isTrue();

    List<Resource> deltaClusters = delta.next().getResourcesList();
    assertThat(deltaClusters).extracting(Resource::getName).containsExactly("c1", "c2", "c3");
    assertThat(deltaClusters)
        .extracting(resource -> resource.getCacheControl().getDoNotCache())
        .containsExactly(true, false, false);
  }

  // ---- Delta (pilot/pkg/xds/delta.go) ----

  @Test
  void aDeltaInitSubscribesTheInitialResourceVersionsAndReportsTheVanishedOnesRemoved() {
    DeltaStream stream = new DeltaStream();
    stream.send(delta(CLUSTER_TYPE, "", List.of(), List.of(), Map.of("c1", "old", "gone", "old")));
    DeltaDiscoveryResponse clusters = stream.next();
    assertThat(names(clusters)).containsExactly("c1", "c2");
    assertThat(clusters.getRemovedResourcesList()).containsExactly("gone");

    stream.send(delta(ENDPOINT_TYPE, "", List.of("c1"), List.of(), Map.of("c2", "old")));
    DeltaDiscoveryResponse endpoints = stream.next();
    assertThat(names(endpoints)).containsExactly("c1", "c2");
    assertThat(endpoints.getRemovedResourcesList()).isEmpty();
  }

  @Test
  void aDeltaRequestWithAnExpiredNonceGetsNoResponse() {
    DeltaStream stream = new DeltaStream();
    stream.subscribe(ENDPOINT_TYPE, "c1");
    DeltaDiscoveryResponse first = stream.next();
    istiod.setSnapshot(GROUP, defaultSnapshotWith(endpoints("c1", 9001)));
    stream.next();

    stream.send(delta(ENDPOINT_TYPE, first.getNonce(), List.of("c2"), List.of(), Map.of()));
    stream.nothingArrives();

    stream.send(delta(ENDPOINT_TYPE, "", List.of("c2"), List.of(), Map.of()));
    assertThat(names(stream.next())).containsExactly("c2");
  }

  @Test
  void resubscribingANameAlreadySubscribedGetsNoResponse() {
    DeltaStream stream = new DeltaStream();
    stream.subscribe(ENDPOINT_TYPE, "c1");
    stream.ack(stream.next());

    stream.send(delta(ENDPOINT_TYPE, "", List.of("c1"), List.of(), Map.of()));

    stream.nothingArrives();
  }

  @Test
  void aNameSubscribedAndUnsubscribedInOneRequestEndsUnsubscribed() {
    DeltaStream stream = new DeltaStream();
    stream.subscribe(ENDPOINT_TYPE, "c1");
    stream.ack(stream.next());

    stream.send(delta(ENDPOINT_TYPE, "", List.of("c2"), List.of("c2"), Map.of()));
    stream.nothingArrives();

    istiod.setSnapshot(GROUP, defaultSnapshotWith(endpoints("c1", 9001), endpoints("c2", 9002)));
    assertThat(names(stream.next())).containsExactly("c1");
  }

  @Test
  void onlyUnsubscribingEdsOrRdsNamesGetsNoResponse() {
    DeltaStream stream = new DeltaStream();
    stream.subscribe(ENDPOINT_TYPE, "c1", "c2");
    stream.ack(stream.next());
    stream.subscribe(ROUTE_TYPE, "r1");
    stream.ack(stream.next());

    stream.send(delta(ENDPOINT_TYPE, "", List.of(), List.of("c2"), Map.of()));
    stream.send(delta(ROUTE_TYPE, "", List.of(), List.of("r1"), Map.of()));

    stream.nothingArrives();
  }

  @Test
  void answeringAClusterRequestForcesAnEdsPush() {
    DeltaStream stream = new DeltaStream();
    stream.subscribe(ENDPOINT_TYPE, "c1");
    stream.ack(stream.next());

    stream.subscribe(CLUSTER_TYPE);

    DeltaDiscoveryResponse clusters = stream.next();
    DeltaDiscoveryResponse endpoints = stream.next();
    assertThat(List.of(clusters.getTypeUrl(), endpoints.getTypeUrl()))
        .containsExactly(CLUSTER_TYPE, ENDPOINT_TYPE);
    assertThat(names(endpoints)).containsExactly("c1");
  }

  @Test
  void aDeltaNackGetsNoResponse() {
    DeltaStream stream = new DeltaStream();
    stream.subscribe(ENDPOINT_TYPE, "c1");
    DeltaDiscoveryResponse first = stream.next();

    stream.send(
        delta(ENDPOINT_TYPE, first.getNonce(), List.of("c2"), List.of(), Map.of()).toBuilder()
            .setErrorDetail(com.google.rpc.Status.newBuilder().setMessage("rejected"))
            .build());

    stream.nothingArrives();
  }

  @Test
  void resubscribingTheWildcardResendsEveryClusterSinceStarIsNeverKept() {
    DeltaStream stream = new DeltaStream();
    stream.subscribe(CLUSTER_TYPE, "*");
    stream.ack(stream.next());
    stream.nothingArrives();

    stream.send(delta(CLUSTER_TYPE, "", List.of("*"), List.of(), Map.of()));

    assertThat(names(stream.next())).containsExactly("c1", "c2");
  }

  @Test
  void aDeltaClusterPushReportsRemovedClustersAndResendsEveryWatchedAssignment() {
    DeltaStream stream = new DeltaStream();
    stream.subscribe(CLUSTER_TYPE);
    stream.ack(stream.next());
    stream.subscribe(ENDPOINT_TYPE, "c1", "c2");
    stream.ack(stream.next());

    istiod.setSnapshot(
        GROUP,
        snapshot(
            List.of(cluster("c1")),
            List.of(endpoints("c1", 8001)),
            List.of(listener("l1"), listener("l2")),
            List.of(route("r1")),
            List.of(secret("s1"))));

    DeltaDiscoveryResponse clusters = stream.next();
    assertThat(names(clusters)).containsExactly("c1");
    assertThat(clusters.getRemovedResourcesList()).containsExactly("c2");
    DeltaDiscoveryResponse endpoints = stream.next();
    assertThat(names(endpoints)).containsExactly("c1", "c2");
    assertThat(endpoints.getRemovedResourcesList()).isEmpty();
    assertThat(endpoints.getSystemVersionInfo()).isEqualTo(clusters.getSystemVersionInfo());
  }

  @Test
  void aDeltaEndpointOnlyPushSendsOnlyTheChangedAssignment() {
    DeltaStream stream = new DeltaStream();
    stream.subscribe(ENDPOINT_TYPE, "c1", "c2");
    stream.ack(stream.next());

    istiod.setSnapshot(GROUP, defaultSnapshotWith(endpoints("c2", 9002)));

    DeltaDiscoveryResponse pushed = stream.next();
    assertThat(names(pushed)).containsExactly("c2");
    assertThat(pushed.getRemovedResourcesList()).isEmpty();
  }

  // ---- What every UpstreamControlPlane offers ----

  @Test
  void itRecordsStreamsRequestsAndResponses() {
    SotwStream sotw = new SotwStream();
    sotw.ask(CLUSTER_TYPE);
    sotw.next();
    DeltaStream delta =
        new DeltaStream(Node.newBuilder().setId("sidecar-2").setCluster("other").build());
    delta.subscribe(CLUSTER_TYPE);
    delta.next();

    assertThat(istiod.streamGroups()).containsExactly(GROUP, "other");
    assertThat(istiod.streamNodeIds()).containsExactly("sidecar-1", "sidecar-2");
    assertThat(istiod.requests()).hasSize(1);
    assertThat(istiod.deltaRequests()).hasSize(1);
    assertThat(istiod.responsesSent()).isEqualTo(2);

    delta.cancel();
    await().atMost(RESPONSE_WAIT).until(() -> istiod.openStreams() == 1);
    assertThat(istiod.openStreamNodeIds()).containsExactly("sidecar-1");
  }

  @Test
  void stopCutsEveryStreamAndStartServesTheSameStateOnTheSamePort() throws Exception {
    String target = istiod.target();
    SotwStream before = new SotwStream();
    before.ask(CLUSTER_TYPE);
    before.next();

    istiod.stop();
    before.isCutOff();
    await().atMost(RESPONSE_WAIT).until(() -> istiod.openStreams() == 0);

    istiod.start();
    assertThat(istiod.target()).isEqualTo(target);
    SotwStream after = new SotwStream();
    after.ask(CLUSTER_TYPE);
    assertThat(names(after.next())).containsExactly("c1", "c2");
  }

  // ---- A raw ADS client ----

  /** Every stream the clusters, listeners and the route of the default snapshot, all ACKed. */
  private SotwStream watchingEverything() {
    SotwStream stream = new SotwStream();
    stream.ask(CLUSTER_TYPE);
    stream.send(ack(stream.next()));
    stream.ask(ENDPOINT_TYPE, "c1", "c2");
    stream.send(ack(stream.next(), "c1", "c2"));
    stream.ask(LISTENER_TYPE);
    stream.send(ack(stream.next()));
    stream.ask(ROUTE_TYPE, "r1");
    stream.send(ack(stream.next(), "r1"));
    stream.nothingArrives();
    return stream;
  }

  private ManagedChannel channel() {
    ManagedChannel channel =
        Grpc.newChannelBuilder(istiod.target(), InsecureChannelCredentials.create()).build();
    channels.add(channel);
    return channel;
  }

  /** What one stream sent and received, for failure messages. */
  private abstract static class Exchange<ResponseT extends Message> {
    final BlockingQueue<ResponseT> received = new LinkedBlockingQueue<>();
    final CompletableFuture<Status> ended = new CompletableFuture<>();
    final List<String> transcript = new CopyOnWriteArrayList<>();

    StreamObserver<ResponseT> observer() {
      return new StreamObserver<>() {
        @Override
        public void onNext(ResponseT response) {
          transcript.add("<- " + summary(response));
          received.add(response);
        }

        @Override
        public void onError(Throwable error) {
          ended.complete(Status.fromThrowable(error));
        }

        @Override
        public void onCompleted() {
          ended.complete(Status.OK);
        }
      };
    }

    abstract String summary(ResponseT response);

    ResponseT next() {
      try {
        ResponseT response = received.poll(RESPONSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        if (response == null) {
          fail(
              "expected a response within "
                  + RESPONSE_WAIT
                  + "; exchanged:\n"
                  + String.join("\n", transcript));
        }
        return response;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }

    void nothingArrives() {
      try {
        ResponseT response = received.poll(QUIET.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(response)
            .as("no response expected; exchanged:\n%s", String.join("\n", transcript))
            .isNull();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }

    void endsWith(Status.Code code, String description) {
      Status status = ended.orTimeout(RESPONSE_WAIT.toMillis(), TimeUnit.MILLISECONDS).join();
      assertThat(status.getCode())
          .as("stream end; exchanged:\n%s", String.join("\n", transcript))
          .isEqualTo(code);
      assertThat(status.getDescription()).isEqualTo(description);
    }

    /**
     * The server went away: gRPC reports the reset stream as cancelled, or the lost connection as
     * unavailable.
     */
    void isCutOff() {
      Status status = ended.orTimeout(RESPONSE_WAIT.toMillis(), TimeUnit.MILLISECONDS).join();
      assertThat(status.getCode())
          .as("stream end; exchanged:\n%s", String.join("\n", transcript))
          .isIn(Status.Code.CANCELLED, Status.Code.UNAVAILABLE);
    }
  }

  /** A SotW stream; its node, if any, goes on its first request only, as Envoy sends it. */
  private final class SotwStream extends Exchange<DiscoveryResponse> {
    private final Node node;
    private final StreamObserver<DiscoveryRequest> requests;
    private boolean sentFirst;

    SotwStream() {
      this(NODE);
    }

    SotwStream(Node node) {
      this.node = node;
      requests =
          AggregatedDiscoveryServiceGrpc.newStub(channel()).streamAggregatedResources(observer());
    }

    void send(DiscoveryRequest request) {
      if (!sentFirst && node != null) {
        request = request.toBuilder().setNode(node).build();
      }
      sentFirst = true;
      transcript.add(
          "-> "
              + request.getTypeUrl()
              + " names="
              + request.getResourceNamesList()
              + " version="
              + request.getVersionInfo()
              + " nonce="
              + request.getResponseNonce()
              + (request.hasErrorDetail() ? " NACK" : "")
              + (request.hasNode() ? " node=" + request.getNode().getId() : ""));
      requests.onNext(request);
    }

    /** A type's first request, as Envoy sends it: empty version and nonce. */
    void ask(String typeUrl, String... names) {
      send(request(typeUrl, "", "", names));
    }

    @Override
    String summary(DiscoveryResponse response) {
      return response.getTypeUrl()
          + " "
          + names(response)
          + " version="
          + response.getVersionInfo()
          + " nonce="
          + response.getNonce();
    }
  }

  /** A Delta stream; its node, if any, goes on its first request only. */
  private final class DeltaStream extends Exchange<DeltaDiscoveryResponse> {
    private final Node node;
    private final StreamObserver<DeltaDiscoveryRequest> requests;
    private boolean sentFirst;

    DeltaStream() {
      this(NODE);
    }

    DeltaStream(Node node) {
      this.node = node;
      requests =
          AggregatedDiscoveryServiceGrpc.newStub(channel()).deltaAggregatedResources(observer());
    }

    void send(DeltaDiscoveryRequest request) {
      if (!sentFirst && node != null) {
        request = request.toBuilder().setNode(node).build();
      }
      sentFirst = true;
      transcript.add(
          "-> "
              + request.getTypeUrl()
              + " subscribe="
              + request.getResourceNamesSubscribeList()
              + " unsubscribe="
              + request.getResourceNamesUnsubscribeList()
              + " initial="
              + request.getInitialResourceVersionsMap().keySet()
              + " nonce="
              + request.getResponseNonce()
              + (request.hasErrorDetail() ? " NACK" : "")
              + (request.hasNode() ? " node=" + request.getNode().getId() : ""));
      requests.onNext(request);
    }

    void subscribe(String typeUrl, String... names) {
      send(delta(typeUrl, "", List.of(names), List.of(), Map.of()));
    }

    void ack(DeltaDiscoveryResponse response) {
      send(delta(response.getTypeUrl(), response.getNonce(), List.of(), List.of(), Map.of()));
    }

    void cancel() {
      requests.onError(Status.CANCELLED.asRuntimeException());
    }

    @Override
    String summary(DeltaDiscoveryResponse response) {
      return response.getTypeUrl()
          + " "
          + names(response)
          + " removed="
          + response.getRemovedResourcesList()
          + " version="
          + response.getSystemVersionInfo()
          + " nonce="
          + response.getNonce();
    }
  }

  private static DiscoveryRequest request(
      String typeUrl, String version, String nonce, String... names) {
    return DiscoveryRequest.newBuilder()
        .setTypeUrl(typeUrl)
        .setVersionInfo(version)
        .setResponseNonce(nonce)
        .addAllResourceNames(List.of(names))
        .build();
  }

  /** An ACK of {@code response} (its version and nonce) asking for {@code names}. */
  private static DiscoveryRequest ack(DiscoveryResponse response, String... names) {
    return request(response.getTypeUrl(), response.getVersionInfo(), response.getNonce(), names);
  }

  /** A NACK of {@code response}: its nonce, no accepted version, an error. */
  private static DiscoveryRequest nack(DiscoveryResponse response, String... names) {
    return request(response.getTypeUrl(), "", response.getNonce(), names).toBuilder()
        .setErrorDetail(com.google.rpc.Status.newBuilder().setCode(3).setMessage("rejected"))
        .build();
  }

  private static DeltaDiscoveryRequest delta(
      String typeUrl,
      String nonce,
      List<String> subscribe,
      List<String> unsubscribe,
      Map<String, String> initialVersions) {
    return DeltaDiscoveryRequest.newBuilder()
        .setTypeUrl(typeUrl)
        .setResponseNonce(nonce)
        .addAllResourceNamesSubscribe(subscribe)
        .addAllResourceNamesUnsubscribe(unsubscribe)
        .putAllInitialResourceVersions(initialVersions)
        .build();
  }

  private static List<String> names(DiscoveryResponse response) {
    return response.getResourcesList().stream().map(IstiodModelTest::name).toList();
  }

  private static List<String> names(DeltaDiscoveryResponse response) {
    return response.getResourcesList().stream().map(Resource::getName).toList();
  }

  private static String name(Any any) {
    try {
      if (any.is(Resource.class)) {
        return any.unpack(Resource.class).getName();
      } else if (any.is(Cluster.class)) {
        return any.unpack(Cluster.class).getName();
      } else if (any.is(ClusterLoadAssignment.class)) {
        return any.unpack(ClusterLoadAssignment.class).getClusterName();
      } else if (any.is(Listener.class)) {
        return any.unpack(Listener.class).getName();
      } else if (any.is(RouteConfiguration.class)) {
        return any.unpack(RouteConfiguration.class).getName();
      } else if (any.is(Secret.class)) {
        return any.unpack(Secret.class).getName();
      }
      return any.getTypeUrl();
    } catch (InvalidProtocolBufferException e) {
      throw new AssertionError(e);
    }
  }

  // ---- Configuration ----

  /**
   * The default snapshot with {@code replacements} in place of (or added to) its resources of the
   * same name.
   */
  private static Snapshot defaultSnapshotWith(Message... replacements) {
    Map<String, Cluster> clusters = new TreeMap<>(Map.of("c1", cluster("c1"), "c2", cluster("c2")));
    Map<String, ClusterLoadAssignment> endpoints =
        new TreeMap<>(Map.of("c1", endpoints("c1", 8001), "c2", endpoints("c2", 8002)));
    for (Message replacement : replacements) {
      if (replacement instanceof Cluster cluster) {
        clusters.put(cluster.getName(), cluster);
      } else if (replacement instanceof ClusterLoadAssignment assignment) {
        endpoints.put(assignment.getClusterName(), assignment);
      }
    }
    return snapshot(
        List.copyOf(clusters.values()),
        List.copyOf(endpoints.values()),
        List.of(listener("l1"), listener("l2")),
        List.of(route("r1")),
        List.of(secret("s1")));
  }

  private static Snapshot snapshot(
      List<Cluster> clusters,
      List<ClusterLoadAssignment> endpoints,
      List<Listener> listeners,
      List<RouteConfiguration> routes,
      List<Secret> secrets) {
    return Snapshot.create(clusters, endpoints, listeners, routes, secrets, "ignored-by-istiod");
  }

  private static Cluster cluster(String name) {
    return Cluster.newBuilder()
        .setName(name)
        .setType(Cluster.DiscoveryType.EDS)
        .setEdsClusterConfig(
            Cluster.EdsClusterConfig.newBuilder()
                .setEdsConfig(
                    ConfigSource.newBuilder().setAds(AggregatedConfigSource.getDefaultInstance())))
        .build();
  }

  private static ClusterLoadAssignment endpoints(String cluster, int port) {
    return Assignments.oneEndpoint(cluster, port);
  }

  private static Listener listener(String name) {
    return Listener.newBuilder().setName(name).build();
  }

  private static RouteConfiguration route(String name) {
    return RouteConfiguration.newBuilder()
        .setName(name)
        .addVirtualHosts(VirtualHost.newBuilder().setName("all").addDomains("*"))
        .build();
  }

  private static Secret secret(String name) {
    return Secret.newBuilder().setName(name).build();
  }
}
