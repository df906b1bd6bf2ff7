package io.xdsproxy.upstream.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import com.google.protobuf.util.Durations;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Address;
import io.envoyproxy.envoy.config.core.v3.AggregatedConfigSource;
import io.envoyproxy.envoy.config.core.v3.ApiVersion;
import io.envoyproxy.envoy.config.core.v3.ConfigSource;
import io.envoyproxy.envoy.config.core.v3.SocketAddress;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Filter;
import io.envoyproxy.envoy.config.listener.v3.FilterChain;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.config.route.v3.RouteAction;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.RouteMatch;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.Rds;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc.AggregatedDiscoveryServiceImplBase;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.testing.Assignments;
import io.xdsproxy.upstream.testing.EnvoyLikeClient.WarmCause;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.assertj.core.groups.Tuple;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/**
 * {@link EnvoyLikeClient} against the real java-control-plane where it can show a rule, and against
 * a scripted ADS server where only an exact script can (what is withheld, what is never sent).
 */
@Execution(ExecutionMode.CONCURRENT)
class EnvoyLikeClientTest {

  private static final String GROUP = "fleet";
  private static final Duration WAIT = Duration.ofSeconds(5);

  /** How long "nothing is sent" is watched for. */
  private static final Duration QUIET = Duration.ofMillis(300);

  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  private <T extends AutoCloseable> T open(T closeable) {
    opened.add(closeable);
    return closeable;
  }

  // With java-control-plane. Its SimpleCache finds a request's group from that request's own node
  // (SimpleCache.createWatch), so a SotW client must send the node every time, as Envoy does unless
  // set_node_on_first_message_only: these clients do.

  @Test
  void startsWithCdsThenEdsAndAsksForListenersOnlyWhenEveryClusterIsWarmThenRoutes()
      throws Exception {
    ControlPlane controlPlane = open(new ControlPlane());
    controlPlane.setSnapshot(
        GROUP,
        Snapshot.create(
            List.of(edsCluster("c-1", "svc-a", 1), edsCluster("c-2", "svc-b", 1)),
            List.of(assignment("svc-a", 8001), assignment("svc-b", 8002)),
            List.of(listener("ingress", "route-1")),
            List.of(route("route-1", "c-1")),
            List.of(),
            "1"));

    EnvoyLikeClient envoy =
        open(
            EnvoyLikeClient.sotw()
                .nodeCluster(GROUP)
                .nodeOnFirstMessageOnly(false)
                .start(controlPlane.target()));

    awaitUntil(
        envoy, WAIT, "initialized, with routes", () -> envoy.routes().containsKey("route-1"));
    List<DiscoveryRequest> requests = envoy.sotwRequests();
    assertThat(firstRequestTypes(requests, DiscoveryRequest::getTypeUrl))
        .as(envoy.transcript())
        .containsExactly("CDS", "EDS", "LDS", "RDS");
    assertThat(envoy.warmings())
        .as(envoy.transcript())
        .extracting(EnvoyLikeClient.ClusterWarming::cluster, EnvoyLikeClient.ClusterWarming::cause)
        .containsExactlyInAnyOrder(
            Tuple.tuple("c-1", WarmCause.ASSIGNMENT), Tuple.tuple("c-2", WarmCause.ASSIGNMENT));
    Instant initialized = envoy.initializedAt().orElseThrow();
    assertThat(envoy.warmings())
        .allSatisfy(warming -> assertThat(warming.warmedAt()).isBeforeOrEqualTo(initialized));
    // During initialization the secondary clusters' EDS request goes out before the CDS ACK, and
    // CDS is not held.
    assertThat(indexOf(requests, "EDS", 0)).isLessThan(indexOf(requests, "CDS", 1));
    assertThat(envoy.hosts("c-1")).containsExactly("127.0.0.1:8001");
    assertThat(envoy.modelErrors()).isEmpty();
  }

  @Test
  void sotwWarmingReRequestAfterAClusterChangeIsAnsweredByJavaControlPlaneAndTheClusterWarms()
      throws Exception {
    ControlPlane controlPlane = open(new ControlPlane());
    Cluster before = edsCluster("c-1", "svc-a", 1);
    Cluster changed = edsCluster("c-1", "svc-a", 2);
    controlPlane.setSnapshot(
        GROUP, separatelyVersioned(before, "c1", assignment("svc-a", 8001), "e1"));
    EnvoyLikeClient envoy =
        open(
            EnvoyLikeClient.sotw()
                .nodeCluster(GROUP)
                .nodeOnFirstMessageOnly(false)
                .start(controlPlane.target()));
    awaitUntil(
        envoy, WAIT, "initialized, with routes", () -> envoy.routes().containsKey("route-1"));
    List<DiscoveryRequest> beforeChange = envoy.sotwRequests();
    DiscoveryRequest lastEdsAck =
        beforeChange.stream()
            .filter(r -> r.getTypeUrl().equals(TypeUrl.ENDPOINT.url()))
            .reduce((first, second) -> second)
            .orElseThrow();

    Instant change = Instant.now();
    // Only CDS changes version: the EDS watch java-control-plane holds stays unanswered, so only
    // the re-request (answered because hasClusterChanged) can bring the assignment.
    controlPlane.setSnapshot(
        GROUP, separatelyVersioned(changed, "c2", assignment("svc-a", 8001), "e1"));

    awaitUntil(
        envoy,
        Duration.ofSeconds(1),
        "c-1 warmed by an assignment after the change",
        () -> envoy.warmedByAssignmentSince(change, "c-1"));
    awaitUntil(
        envoy,
        WAIT,
        "the CDS ACK of c2",
        () ->
            envoy.sotwRequests().stream()
                .anyMatch(
                    r ->
                        r.getTypeUrl().equals(TypeUrl.CLUSTER.url())
                            && r.getVersionInfo().equals("c2")));
    List<DiscoveryRequest> afterChange =
        envoy.sotwRequests().subList(beforeChange.size(), envoy.sotwRequests().size());
    assertThat(afterChange.get(0))
        .as("the warming re-request is byte for byte the last EDS ACK\n%s", envoy.transcript())
        .isEqualTo(lastEdsAck);
    int cdsAck = indexOfVersion(afterChange, TypeUrl.CLUSTER, "c2");
    assertThat(cdsAck)
        .as("the CDS ACK follows the EDS response that warmed the cluster\n%s", envoy.transcript())
        .isGreaterThan(0);
    assertThat(envoy.activeClusters().get("c-1")).isEqualTo(changed);
    assertThat(envoy.hosts("c-1")).containsExactly("127.0.0.1:8001");
    assertThat(envoy.modelErrors()).isEmpty();
  }

  @Test
  void
      sotwReconnectRequestsEveryTypeInSubscriptionOrderWithKeptVersionsAndEmptyNoncesBootstrapEdsFirst()
          throws Exception {
    ControlPlane controlPlane = open(new ControlPlane());
    controlPlane.setSnapshot(
        GROUP,
        Snapshot.create(
            List.of(edsCluster("c-1", "svc-a", 1)),
            List.of(assignment("svc-a", 8001), assignment("svc-boot", 8009)),
            List.of(listener("ingress", "route-1")),
            List.of(route("route-1", "c-1")),
            List.of(),
            "7"));
    EnvoyLikeClient envoy =
        open(
            EnvoyLikeClient.sotw()
                .nodeCluster(GROUP)
                .nodeOnFirstMessageOnly(false)
                .bootstrapCluster(edsCluster("boot", "svc-boot", 1))
                .start(controlPlane.target()));
    awaitUntil(
        envoy, WAIT, "initialized, with routes", () -> envoy.routes().containsKey("route-1"));
    assertThat(firstRequestTypes(envoy.sotwRequests(), DiscoveryRequest::getTypeUrl))
        .as(envoy.transcript())
        .containsExactly("EDS", "CDS", "LDS", "RDS");
    int before = envoy.sotwRequests().size();

    envoy.reconnect();

    awaitUntil(
        envoy,
        WAIT,
        "four requests on the new stream",
        () -> envoy.sotwRequests().size() >= before + 4);
    List<DiscoveryRequest> resent = envoy.sotwRequests().subList(before, before + 4);
    assertThat(resent)
        .as(envoy.transcript())
        .extracting(r -> EnvoyMux.shortType(r.getTypeUrl()))
        .containsExactly("EDS", "CDS", "LDS", "RDS");
    assertThat(resent)
        .as(envoy.transcript())
        .allSatisfy(
            request -> {
              assertThat(request.getResponseNonce()).isEmpty();
              assertThat(request.getVersionInfo()).isEqualTo("7");
            });
    assertThat(resent.get(0).getResourceNamesList()).containsExactlyInAnyOrder("svc-a", "svc-boot");
    assertThat(envoy.modelErrors()).isEmpty();
  }

  @Test
  void deltaReconnectSendsInitialResourceVersionsOfEverythingHeldAndNoStaleNonce()
      throws Exception {
    ControlPlane controlPlane = open(new ControlPlane());
    controlPlane.setSnapshot(
        GROUP,
        Snapshot.create(
            List.of(edsCluster("c-1", "svc-a", 1)),
            List.of(assignment("svc-a", 8001)),
            List.of(listener("ingress", "route-1")),
            List.of(route("route-1", "c-1")),
            List.of(),
            "1"));
    EnvoyLikeClient envoy =
        open(EnvoyLikeClient.delta().nodeCluster(GROUP).start(controlPlane.target()));
    awaitUntil(
        envoy, WAIT, "initialized, with routes", () -> envoy.routes().containsKey("route-1"));
    assertThat(firstRequestTypes(envoy.deltaRequests(), DeltaDiscoveryRequest::getTypeUrl))
        .as(envoy.transcript())
        .containsExactly("CDS", "EDS", "LDS", "RDS");
    int before = envoy.deltaRequests().size();

    envoy.reconnect();

    awaitUntil(
        envoy,
        WAIT,
        "four requests on the new stream",
        () -> envoy.deltaRequests().size() >= before + 4);
    List<DeltaDiscoveryRequest> resent = envoy.deltaRequests().subList(before, before + 4);
    assertThat(resent)
        .as(envoy.transcript())
        .extracting(r -> EnvoyMux.shortType(r.getTypeUrl()))
        .containsExactly("CDS", "EDS", "LDS", "RDS");
    assertThat(resent).allSatisfy(request -> assertThat(request.getResponseNonce()).isEmpty());
    // The wildcard types are still legacy wildcards: nothing to subscribe, everything held in
    // initial_resource_versions.
    assertThat(resent.get(0).getResourceNamesSubscribeList()).isEmpty();
    assertThat(resent.get(0).getInitialResourceVersionsMap())
        .containsOnlyKeys("c-1")
        .doesNotContainValue("");
    assertThat(resent.get(1).getResourceNamesSubscribeList()).containsExactly("svc-a");
    assertThat(resent.get(1).getInitialResourceVersionsMap())
        .containsOnlyKeys("svc-a")
        .doesNotContainValue("");
    assertThat(resent.get(2).getInitialResourceVersionsMap()).containsOnlyKeys("ingress");
    assertThat(resent.get(3).getResourceNamesSubscribeList()).containsExactly("route-1");
    assertThat(resent.get(3).getInitialResourceVersionsMap()).containsOnlyKeys("route-1");
    assertThat(envoy.modelErrors()).isEmpty();
  }

  // With a scripted server

  @Test
  void cdsAckIsWithheldWhileAChangedClusterWarmsAndSentOnceItsAssignmentArrives() throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy = open(EnvoyLikeClient.sotw().nodeCluster(GROUP).start(server.target()));
    sotwInit(server, envoy);

    Instant change = Instant.now();
    server.send(sotw(TypeUrl.CLUSTER, "2", "c2", edsCluster("c-1", "svc-a", 2)));

    DiscoveryRequest reRequest = server.next();
    assertThat(reRequest)
        .as("the warming re-request looks like an ACK of the last EDS response")
        .isEqualTo(sotwRequest(TypeUrl.ENDPOINT, "1", "e1", "svc-a"));
    server.expectNoRequest(QUIET);
    assertThat(envoy.isWarming("c-1")).isTrue();
    assertThat(envoy.hosts("c-1"))
        .as("the old cluster serves meanwhile")
        .containsExactly("127.0.0.1:8001");

    server.send(sotw(TypeUrl.ENDPOINT, "2", "e2", assignment("svc-a", 8002)));

    assertThat(server.next())
        .as(envoy.transcript())
        .isEqualTo(sotwRequest(TypeUrl.CLUSTER, "2", "c2"));
    assertThat(server.next())
        .as(envoy.transcript())
        .isEqualTo(sotwRequest(TypeUrl.ENDPOINT, "2", "e2", "svc-a"));
    // The old cluster's watch went while EDS was paused for this response: its request is the ACK.
    server.expectNoRequest(QUIET);
    assertThat(envoy.warmedByAssignmentSince(change, "c-1")).isTrue();
    awaitUntil(
        envoy,
        WAIT,
        "c-1 on the new host",
        () -> envoy.hosts("c-1").equals(List.of("127.0.0.1:8002")));
    assertThat(envoy.modelErrors()).isEmpty();
  }

  @Test
  void sotwClusterWarmedByTimeoutDropsTheOldWatchWhichSendsTheEdsRequestAgainThenAcksCds()
      throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy =
        open(
            EnvoyLikeClient.sotw()
                .nodeCluster(GROUP)
                .initialFetchTimeout(Duration.ofMillis(200))
                .start(server.target()));
    sotwInit(server, envoy);
    Instant change = Instant.now();
    server.send(sotw(TypeUrl.CLUSTER, "2", "c2", edsCluster("c-1", "svc-a", 2)));
    DiscoveryRequest reRequest = server.next();

    assertThat(server.next())
        .as("the old cluster's watch goes with EDS not paused\n%s", envoy.transcript())
        .isEqualTo(reRequest);
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.CLUSTER, "2", "c2"));
    assertThat(envoy.warmedByTimeoutSince(change, "c-1")).isTrue();
    assertThat(envoy.hosts("c-1")).isEmpty();
  }

  @Test
  void aClientThatReconnectsOnItsOwnOpensANewStreamWhenTheServerEndsOne() throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy =
        open(
            EnvoyLikeClient.sotw()
                .nodeCluster(GROUP)
                .reconnectAfter(Duration.ofMillis(50))
                .start(server.target()));
    sotwInit(server, envoy);

    server.endStream(Status.UNAVAILABLE);

    assertThat(server.next())
        .as(envoy.transcript())
        .isEqualTo(sotwRequest(TypeUrl.CLUSTER, "1", "").toBuilder().setNode(envoy.node()).build());
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.ENDPOINT, "1", "", "svc-a"));
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.LISTENER, "1", ""));
    assertThat(envoy.streamOpen()).isTrue();
  }

  @Test
  void anEdsResponseWithoutTheWarmingClustersNameDoesNotWarmIt() throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy = open(EnvoyLikeClient.sotw().nodeCluster(GROUP).start(server.target()));
    sotwInit(server, envoy);
    server.send(sotw(TypeUrl.CLUSTER, "2", "c2", edsCluster("c-1", "svc-a", 2)));
    server.next();

    server.send(sotw(TypeUrl.ENDPOINT, "2", "e2"));

    assertThat(server.next())
        .as("an ACK of the EDS response, but still no CDS ACK\n%s", envoy.transcript())
        .isEqualTo(sotwRequest(TypeUrl.ENDPOINT, "2", "e2", "svc-a"));
    server.expectNoRequest(QUIET);
    assertThat(envoy.isWarming("c-1")).isTrue();
  }

  @Test
  void sotwReconnectWhileAClusterWarmsSendsNoCdsRequestUntilItIsWarm() throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy = open(EnvoyLikeClient.sotw().nodeCluster(GROUP).start(server.target()));
    sotwInit(server, envoy);
    server.send(sotw(TypeUrl.CLUSTER, "2", "c2", edsCluster("c-1", "svc-a", 2)));
    server.next();

    envoy.reconnect();

    DiscoveryRequest eds = server.next();
    assertThat(eds)
        .as(envoy.transcript())
        .isEqualTo(
            sotwRequest(TypeUrl.ENDPOINT, "1", "", "svc-a").toBuilder()
                .setNode(envoy.node())
                .build());
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.LISTENER, "1", ""));
    server.expectNoRequest(QUIET);

    server.send(sotw(TypeUrl.ENDPOINT, "2", "e3", assignment("svc-a", 8002)));

    assertThat(server.next())
        .as(
            "CDS, paused since the change, asks again with the version it took\n%s",
            envoy.transcript())
        .isEqualTo(sotwRequest(TypeUrl.CLUSTER, "2", ""));
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.ENDPOINT, "2", "e3", "svc-a"));
  }

  @Test
  void envoyBefore128ResendsThePreviousStreamsNoncesAfterAReconnect() throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy =
        open(
            EnvoyLikeClient.sotw()
                .nodeCluster(GROUP)
                .keepNoncesAcrossStreams()
                .envoyVersion(1, 27)
                .start(server.target()));
    sotwInit(server, envoy);

    envoy.reconnect();

    assertThat(server.next().getResponseNonce()).isEqualTo("c1");
    assertThat(server.next().getResponseNonce()).isEqualTo("e1");
    assertThat(server.next().getResponseNonce()).isEqualTo("l1");
  }

  @Test
  void aResponseThatDoesNotParseIsNackedWithTheLastAcceptedVersionAndTheNewNonce()
      throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy = open(EnvoyLikeClient.sotw().nodeCluster(GROUP).start(server.target()));
    sotwInit(server, envoy);

    server.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .setVersionInfo("2")
            .setNonce("e2")
            .addResources(
                Any.newBuilder()
                    .setTypeUrl(TypeUrl.ENDPOINT.url())
                    .setValue(ByteString.copyFromUtf8("\u00ff\u00ff")))
            .build());

    DiscoveryRequest nack = server.next();
    assertThat(nack.getVersionInfo()).isEqualTo("1");
    assertThat(nack.getResponseNonce()).isEqualTo("e2");
    assertThat(nack.getErrorDetail().getCode()).isEqualTo(Status.Code.INTERNAL.value());
    assertThat(envoy.nacksSent()).isEqualTo(1);
    assertThat(envoy.hosts("c-1")).containsExactly("127.0.0.1:8001");
  }

  @Test
  void resourcesOfATypeWithoutWatchesAreIgnoredAndTheRequestResentWithTheOldVersion()
      throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy = open(EnvoyLikeClient.sotw().nodeCluster(GROUP).start(server.target()));
    sotwInit(server, envoy);
    server.send(sotw(TypeUrl.CLUSTER, "2", "c2"));
    assertThat(server.next())
        .as("the last EDS watch went with c-1")
        .isEqualTo(sotwRequest(TypeUrl.ENDPOINT, "1", "e1"));
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.CLUSTER, "2", "c2"));

    server.send(sotw(TypeUrl.ENDPOINT, "2", "e2", assignment("svc-a", 8001)));

    assertThat(server.next())
        .as("Ignoring unwatched type URL\n%s", envoy.transcript())
        .isEqualTo(sotwRequest(TypeUrl.ENDPOINT, "1", "e2"));
  }

  @Test
  void deltaSendsNoRequestForAChangedClusterWithTheSameEdsNameSoItStaysWarming() throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy = open(EnvoyLikeClient.delta().nodeCluster(GROUP).start(server.target()));
    deltaInit(server, envoy);

    server.send(
        delta(
            TypeUrl.CLUSTER,
            "d4",
            List.of(resource(edsCluster("c-1", "svc-a", 2), "2")),
            List.of()));

    server.expectNoRequest(QUIET);
    assertThat(envoy.isWarming("c-1")).as(envoy.transcript()).isTrue();
    assertThat(envoy.isWarm("c-1")).isFalse();
    assertThat(envoy.hosts("c-1")).containsExactly("127.0.0.1:8001");
  }

  @Test
  void deltaChangedClusterWithAnInitialFetchTimeoutWarmsWithNoHostsByTimeoutThenAcksCds()
      throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy =
        open(
            EnvoyLikeClient.delta()
                .nodeCluster(GROUP)
                .initialFetchTimeout(Duration.ofMillis(300))
                .start(server.target()));
    deltaInit(server, envoy);

    Instant change = Instant.now();
    server.send(
        delta(
            TypeUrl.CLUSTER,
            "d4",
            List.of(resource(edsCluster("c-1", "svc-a", 2), "2")),
            List.of()));

    DeltaDiscoveryRequest cdsAck = server.nextDelta();
    assertThat(cdsAck.getResponseNonce()).as(envoy.transcript()).isEqualTo("d4");
    assertThat(envoy.warmedByTimeoutSince(change, "c-1")).isTrue();
    assertThat(envoy.warmedByAssignmentSince(change, "c-1")).isFalse();
    assertThat(envoy.hosts("c-1")).isEmpty();
    assertThat(envoy.warmings("c-1").get(1).warmedAt()).isAfterOrEqualTo(change.plusMillis(300));
  }

  @Test
  void withTheEdsCacheOfEnvoy132ADeltaClusterThatTimesOutKeepsTheLastAssignmentOfItsEdsName()
      throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy =
        open(
            EnvoyLikeClient.delta()
                .nodeCluster(GROUP)
                .envoyVersion(1, 32)
                .edsCacheForAds()
                .initialFetchTimeout(Duration.ofMillis(200))
                .start(server.target()));
    deltaInit(server, envoy);

    Instant change = Instant.now();
    server.send(
        delta(
            TypeUrl.CLUSTER,
            "d4",
            List.of(resource(edsCluster("c-1", "svc-a", 2), "2")),
            List.of()));

    assertThat(server.nextDelta().getResponseNonce()).as(envoy.transcript()).isEqualTo("d4");
    assertThat(envoy.warmedSince(change, "c-1", WarmCause.INITIAL_FETCH_TIMEOUT_CACHED)).isTrue();
    assertThat(envoy.hosts("c-1")).containsExactly("127.0.0.1:8001");
  }

  @Test
  void deltaRemovalOfTheEdsNameWarmsTheChangedClusterWithNoHosts() throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy = open(EnvoyLikeClient.delta().nodeCluster(GROUP).start(server.target()));
    deltaInit(server, envoy);
    Instant change = Instant.now();
    server.send(
        delta(
            TypeUrl.CLUSTER,
            "d4",
            List.of(resource(edsCluster("c-1", "svc-a", 2), "2")),
            List.of()));
    server.expectNoRequest(QUIET);

    server.send(delta(TypeUrl.ENDPOINT, "d5", List.of(), List.of("svc-a")));

    assertThat(server.nextDelta().getResponseNonce()).as(envoy.transcript()).isEqualTo("d4");
    assertThat(server.nextDelta().getResponseNonce()).isEqualTo("d5");
    assertThat(envoy.warmedSince(change, "c-1", WarmCause.REMOVED_BY_SERVER)).isTrue();
    assertThat(envoy.hosts("c-1")).isEmpty();
  }

  @Test
  void deltaReconnectToAnotherServerSubscribesEverythingWithTheVersionsItHolds() throws Exception {
    ScriptedAds first = open(new ScriptedAds());
    ScriptedAds second = open(new ScriptedAds());
    EnvoyLikeClient envoy = open(EnvoyLikeClient.delta().nodeCluster(GROUP).start(first.target()));
    deltaInit(first, envoy);

    envoy.reconnect(second.target());

    DeltaDiscoveryRequest cds = second.nextDelta();
    assertThat(cds.getTypeUrl()).as(envoy.transcript()).isEqualTo(TypeUrl.CLUSTER.url());
    assertThat(cds.getResourceNamesSubscribeList()).isEmpty();
    assertThat(cds.getInitialResourceVersionsMap()).isEqualTo(Map.of("c-1", "1"));
    assertThat(cds.getNode()).isEqualTo(envoy.node());
    DeltaDiscoveryRequest eds = second.nextDelta();
    assertThat(eds.getResourceNamesSubscribeList()).containsExactly("svc-a");
    assertThat(eds.getInitialResourceVersionsMap()).isEqualTo(Map.of("svc-a", "1"));
    DeltaDiscoveryRequest lds = second.nextDelta();
    assertThat(lds.getTypeUrl()).isEqualTo(TypeUrl.LISTENER.url());
    assertThat(lds.getInitialResourceVersionsMap()).isEmpty();
    first.expectNoRequest(Duration.ZERO);
  }

  @Test
  void deltaResponseNamingAResourceTwiceIsNacked() throws Exception {
    ScriptedAds server = open(new ScriptedAds());
    EnvoyLikeClient envoy = open(EnvoyLikeClient.delta().nodeCluster(GROUP).start(server.target()));
    deltaInit(server, envoy);

    server.send(
        delta(
            TypeUrl.ENDPOINT,
            "d5",
            List.of(resource(assignment("svc-a", 8002), "2")),
            List.of("svc-a")));

    DeltaDiscoveryRequest nack = server.nextDelta();
    assertThat(nack.getResponseNonce()).isEqualTo("d5");
    assertThat(nack.getErrorDetail().getMessage()).contains("duplicate name svc-a");
    assertThat(envoy.hosts("c-1")).containsExactly("127.0.0.1:8001");
  }

  /** Waits for {@code condition}; if it never holds, fails with the client's transcript. */
  private static void awaitUntil(
      EnvoyLikeClient envoy, Duration atMost, String what, Callable<Boolean> condition) {
    try {
      await().atMost(atMost).until(condition);
    } catch (ConditionTimeoutException e) {
      throw new AssertionError(
          "expected "
              + what
              + " within "
              + atMost
              + "; the client's transcript:\n"
              + envoy.transcript(),
          e);
    }
  }

  // Scripts

  /** Start-up against the scripted server, SotW: one EDS cluster, no listeners. */
  private static void sotwInit(ScriptedAds server, EnvoyLikeClient envoy)
      throws InterruptedException {
    DiscoveryRequest first = server.next();
    assertThat(first)
        .isEqualTo(sotwRequest(TypeUrl.CLUSTER, "", "").toBuilder().setNode(envoy.node()).build());
    server.send(sotw(TypeUrl.CLUSTER, "1", "c1", edsCluster("c-1", "svc-a", 1)));
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.ENDPOINT, "", "", "svc-a"));
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.CLUSTER, "1", "c1"));
    server.send(sotw(TypeUrl.ENDPOINT, "1", "e1", assignment("svc-a", 8001)));
    assertThat(server.next())
        .as(envoy.transcript())
        .isEqualTo(sotwRequest(TypeUrl.LISTENER, "", ""));
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.ENDPOINT, "1", "e1", "svc-a"));
    server.send(sotw(TypeUrl.LISTENER, "1", "l1"));
    assertThat(server.next()).isEqualTo(sotwRequest(TypeUrl.LISTENER, "1", "l1"));
    assertThat(envoy.initialized()).isTrue();
  }

  /** Start-up against the scripted server, Delta: one EDS cluster, no listeners. */
  private static void deltaInit(ScriptedAds server, EnvoyLikeClient envoy)
      throws InterruptedException {
    DeltaDiscoveryRequest first = server.nextDelta();
    assertThat(first.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
    assertThat(first.getResourceNamesSubscribeList()).as("legacy wildcard").isEmpty();
    server.send(
        delta(
            TypeUrl.CLUSTER,
            "d1",
            List.of(resource(edsCluster("c-1", "svc-a", 1), "1")),
            List.of()));
    DeltaDiscoveryRequest eds = server.nextDelta();
    assertThat(eds.getResourceNamesSubscribeList()).containsExactly("svc-a");
    assertThat(server.nextDelta().getResponseNonce()).isEqualTo("d1");
    server.send(
        delta(
            TypeUrl.ENDPOINT, "d2", List.of(resource(assignment("svc-a", 8001), "1")), List.of()));
    assertThat(server.nextDelta().getTypeUrl())
        .as(envoy.transcript())
        .isEqualTo(TypeUrl.LISTENER.url());
    assertThat(server.nextDelta().getResponseNonce()).isEqualTo("d2");
    server.send(delta(TypeUrl.LISTENER, "d3", List.of(), List.of()));
    assertThat(server.nextDelta().getResponseNonce()).isEqualTo("d3");
    assertThat(envoy.initialized()).isTrue();
  }

  /** A request as the model sends it after a stream's first: no node. */
  private static DiscoveryRequest sotwRequest(
      TypeUrl type, String version, String nonce, String... names) {
    return DiscoveryRequest.newBuilder()
        .setTypeUrl(type.url())
        .setVersionInfo(version)
        .setResponseNonce(nonce)
        .addAllResourceNames(List.of(names))
        .build();
  }

  private static DiscoveryResponse sotw(
      TypeUrl type, String version, String nonce, Message... resources) {
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder()
            .setTypeUrl(type.url())
            .setVersionInfo(version)
            .setNonce(nonce);
    for (Message resource : resources) {
      response.addResources(Any.pack(resource));
    }
    return response.build();
  }

  private static DeltaDiscoveryResponse delta(
      TypeUrl type, String nonce, List<Resource> resources, List<String> removed) {
    return DeltaDiscoveryResponse.newBuilder()
        .setTypeUrl(type.url())
        .setNonce(nonce)
        .setSystemVersionInfo(nonce)
        .addAllResources(resources)
        .addAllRemovedResources(removed)
        .build();
  }

  private static Resource resource(Message message, String version) {
    return Resource.newBuilder()
        .setName(EnvoyMux.DecodedResource.nameOf(message))
        .setVersion(version)
        .setResource(Any.pack(message))
        .build();
  }

  private static <T> List<String> firstRequestTypes(List<T> requests, Function<T, String> typeUrl) {
    return requests.stream().map(typeUrl).distinct().map(EnvoyMux::shortType).toList();
  }

  /** Index of the {@code nth} (from 0) request of {@code type}. */
  private static int indexOf(List<DiscoveryRequest> requests, String type, int nth) {
    int seen = 0;
    for (int i = 0; i < requests.size(); i++) {
      if (EnvoyMux.shortType(requests.get(i).getTypeUrl()).equals(type) && seen++ == nth) {
        return i;
      }
    }
    return -1;
  }

  private static int indexOfVersion(List<DiscoveryRequest> requests, TypeUrl type, String version) {
    for (int i = 0; i < requests.size(); i++) {
      if (requests.get(i).getTypeUrl().equals(type.url())
          && requests.get(i).getVersionInfo().equals(version)) {
        return i;
      }
    }
    return -1;
  }

  // Resources

  private static ConfigSource ads() {
    return ConfigSource.newBuilder()
        .setAds(AggregatedConfigSource.getDefaultInstance())
        .setResourceApiVersion(ApiVersion.V3)
        .build();
  }

  /**
   * An EDS cluster over ADS; {@code connectTimeoutSeconds} is what a test changes to make a new
   * version of it.
   */
  private static Cluster edsCluster(String name, String serviceName, int connectTimeoutSeconds) {
    return Cluster.newBuilder()
        .setName(name)
        .setType(Cluster.DiscoveryType.EDS)
        .setEdsClusterConfig(
            Cluster.EdsClusterConfig.newBuilder().setEdsConfig(ads()).setServiceName(serviceName))
        .setConnectTimeout(Durations.fromSeconds(connectTimeoutSeconds))
        .build();
  }

  private static ClusterLoadAssignment assignment(String serviceName, int port) {
    return Assignments.oneEndpoint(serviceName, port);
  }

  /**
   * A socket listener whose HttpConnectionManager takes its routes from RDS resource {@code route}.
   */
  private static Listener listener(String name, String route) {
    HttpConnectionManager manager =
        HttpConnectionManager.newBuilder()
            .setStatPrefix(name)
            .setRds(Rds.newBuilder().setConfigSource(ads()).setRouteConfigName(route))
            .build();
    return Listener.newBuilder()
        .setName(name)
        .setAddress(
            Address.newBuilder()
                .setSocketAddress(
                    SocketAddress.newBuilder().setAddress("0.0.0.0").setPortValue(15001)))
        .addFilterChains(
            FilterChain.newBuilder()
                .addFilters(
                    Filter.newBuilder()
                        .setName("envoy.filters.network.http_connection_manager")
                        .setTypedConfig(Any.pack(manager))))
        .build();
  }

  private static RouteConfiguration route(String name, String cluster) {
    return RouteConfiguration.newBuilder()
        .setName(name)
        .addVirtualHosts(
            VirtualHost.newBuilder()
                .setName(name)
                .addDomains("*")
                .addRoutes(
                    Route.newBuilder()
                        .setMatch(RouteMatch.newBuilder().setPrefix("/"))
                        .setRoute(RouteAction.newBuilder().setCluster(cluster))))
        .build();
  }

  /** One cluster, its assignment, a listener and its route, with CDS and EDS versioned apart. */
  private static Snapshot separatelyVersioned(
      Cluster cluster,
      String clustersVersion,
      ClusterLoadAssignment assignment,
      String endpointsVersion) {
    return Snapshot.create(
        List.of(cluster),
        clustersVersion,
        List.of(assignment),
        endpointsVersion,
        List.of(listener("ingress", "route-1")),
        "l1",
        List.of(route("route-1", cluster.getName())),
        "r1",
        List.of(),
        "s1");
  }

  /**
   * An ADS server (SotW and Delta) that answers nothing by itself: the test reads each request and
   * writes each response, on the latest stream.
   */
  private static final class ScriptedAds implements AutoCloseable {
    private final BlockingQueue<Message> requests = new LinkedBlockingQueue<>();
    private volatile StreamObserver<DiscoveryResponse> sotwStream;
    private volatile StreamObserver<DeltaDiscoveryResponse> deltaStream;
    private final Server server;

    ScriptedAds() throws IOException {
      server =
          NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
              .addService(
                  new AggregatedDiscoveryServiceImplBase() {
                    @Override
                    public StreamObserver<DiscoveryRequest> streamAggregatedResources(
                        StreamObserver<DiscoveryResponse> responses) {
                      sotwStream = responses;
                      return recorder();
                    }

                    @Override
                    public StreamObserver<DeltaDiscoveryRequest> deltaAggregatedResources(
                        StreamObserver<DeltaDiscoveryResponse> responses) {
                      deltaStream = responses;
                      return recorder();
                    }
                  })
              .build()
              .start();
    }

    private <T extends Message> StreamObserver<T> recorder() {
      return new StreamObserver<>() {
        @Override
        public void onNext(T request) {
          requests.add(request);
        }

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {}
      };
    }

    String target() {
      return "127.0.0.1:" + server.getPort();
    }

    DiscoveryRequest next() throws InterruptedException {
      Message request = requests.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(request).as("a SotW request within %s", WAIT).isInstanceOf(DiscoveryRequest.class);
      return (DiscoveryRequest) request;
    }

    DeltaDiscoveryRequest nextDelta() throws InterruptedException {
      Message request = requests.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(request)
          .as("a Delta request within %s", WAIT)
          .isInstanceOf(DeltaDiscoveryRequest.class);
      return (DeltaDiscoveryRequest) request;
    }

    void expectNoRequest(Duration quiet) throws InterruptedException {
      Message request = requests.poll(quiet.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(request).as("no request within %s", quiet).isNull();
    }

    void send(DiscoveryResponse response) {
      sotwStream.onNext(response);
    }

    void send(DeltaDiscoveryResponse response) {
      deltaStream.onNext(response);
    }

    /**
     * Ends the latest SotW stream with {@code status}, as a failing or restarting control plane
     * does.
     */
    void endStream(Status status) {
      sotwStream.onError(status.asRuntimeException());
    }

    @Override
    public void close() {
      server.shutdownNow();
    }
  }
}
