package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.xdsproxy.core.ClientFeatures;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource.UpstreamSession;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.core.testing.Assignments;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One node group's SotW ADS session against java-control-plane, and against a control plane that
 * misbehaves.
 */
class SotwUpstreamSessionTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Backoff FAST =
      new Backoff(Duration.ofMillis(50), Duration.ofMillis(200), 2.0, 0.2);

  /** Whom the group was opened by: the tenant its streams start as. */
  private static final String TENANT = "address 192.0.2.1";

  private static final Node NODE =
      Node.newBuilder().setId("first-client").setCluster("fleet").build();

  /**
   * The node the upstream sees: the group's first client's, announcing what the proxy reads (TTLs,
   * wrapped resources).
   */
  private static final Node ANNOUNCED =
      NODE.toBuilder()
          .addClientFeatures(ClientFeatures.SUPPORTS_TTL)
          .addClientFeatures(ClientFeatures.SUPPORTS_RESOURCE_IN_SOTW)
          .build();

  private final ExecutorService pool = Executors.newFixedThreadPool(2);
  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
  private final List<ResourceUpdate> updates = new CopyOnWriteArrayList<>();
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private AdsUpstream upstream;

  @AfterEach
  void stop() {
    if (upstream != null) {
      upstream.close();
    }
    timer.shutdownNow();
    pool.shutdownNow();
  }

  private UpstreamSession open(String target, Duration notFoundTimeout) {
    try {
      upstream =
          new AdsUpstream(
              AdsUpstream.Settings.plaintext(
                  java.util.List.of(target), AdsUpstream.Protocol.SOTW, FAST, notFoundTimeout),
              pool,
              timer,
              meters);
    } catch (java.io.IOException plaintextReadsNoFile) {
      throw new java.io.UncheckedIOException(plaintextReadsNoFile);
    }
    return upstream.open(new NodeGroupKey("fleet"), NODE, TENANT, updates::add);
  }

  private static Snapshot clusters(String version, String... names) {
    List<Cluster> clusters =
        java.util.Arrays.stream(names)
            .map(
                name ->
                    Cluster.newBuilder().setName(name).setType(Cluster.DiscoveryType.EDS).build())
            .toList();
    List<ClusterLoadAssignment> endpoints =
        java.util.Arrays.stream(names)
            .map(name -> ClusterLoadAssignment.newBuilder().setClusterName(name).build())
            .toList();
    return Snapshot.create(clusters, endpoints, List.of(), List.of(), List.of(), version);
  }

  private ResourceUpdate lastUpdate(TypeUrl type) {
    return updates.stream().filter(u -> u.type().equals(type)).reduce((a, b) -> b).orElse(null);
  }

  private static List<String> names(ResourceUpdate update) {
    return update == null
        ? List.of()
        : update.resources().stream().map(XdsResource::name).sorted().toList();
  }

  private static List<DiscoveryRequest> requestsOf(ControlPlane controlPlane, TypeUrl type) {
    return controlPlane.requests().stream().filter(r -> r.getTypeUrl().equals(type.url())).toList();
  }

  @Test
  void aWildcardIsAskedForTheLegacyWayWithTheNodeAndItsAnswerIsCompleteAndAcked() throws Exception {
    try (ControlPlane controlPlane = new ControlPlane()) {
      controlPlane.setSnapshot("fleet", clusters("1", "a", "b"));
      UpstreamSession session = open(controlPlane.target(), WAIT);

      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));

      await()
          .atMost(WAIT)
          .until(() -> names(lastUpdate(TypeUrl.CLUSTER)).equals(List.of("a", "b")));
      ResourceUpdate update = lastUpdate(TypeUrl.CLUSTER);
      assertThat(update.complete()).isTrue();
      assertThat(update.replaceAll()).isTrue();
      await().atMost(WAIT).until(() -> requestsOf(controlPlane, TypeUrl.CLUSTER).size() >= 2);
      DiscoveryRequest first = requestsOf(controlPlane, TypeUrl.CLUSTER).get(0);
      DiscoveryRequest ack = requestsOf(controlPlane, TypeUrl.CLUSTER).get(1);
      assertThat(first.getResourceNamesList()).isEmpty();
      assertThat(first.getNode()).isEqualTo(ANNOUNCED);
      assertThat(first.getVersionInfo()).isEmpty();
      assertThat(ack.getVersionInfo()).isEqualTo("1");
      assertThat(ack.getResponseNonce()).isNotEmpty();
      assertThat(ack.hasErrorDetail()).isFalse();
      assertThat(controlPlane.streamGroups()).containsExactly("fleet");
    }
  }

  @Test
  void namedInterestAsksForExactlyThoseNamesAndAnAddedNameIsFetched() throws Exception {
    try (ControlPlane controlPlane = new ControlPlane()) {
      controlPlane.setSnapshot("fleet", clusters("1", "a", "b"));
      UpstreamSession session = open(controlPlane.target(), WAIT);

      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a")));
      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.ENDPOINT)).equals(List.of("a")));
      assertThat(lastUpdate(TypeUrl.ENDPOINT).complete())
          .as("named answers say nothing of other names")
          .isFalse();

      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "b")));

      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.ENDPOINT)).contains("b"));
      assertThat(requestsOf(controlPlane, TypeUrl.ENDPOINT))
          .anySatisfy(
              request -> assertThat(request.getResourceNamesList()).containsExactly("a", "b"));
    }
  }

  @Test
  void aWildcardAfterNamesIsAskedForOnANewStreamTheLegacyWay() throws Exception {
    try (ControlPlane controlPlane = new ControlPlane()) {
      controlPlane.setSnapshot("fleet", clusters("1", "a", "b"));
      UpstreamSession session = open(controlPlane.target(), WAIT);
      session.updateInterest(TypeUrl.CLUSTER, new Interest(false, Set.of("a")));
      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.CLUSTER)).equals(List.of("a")));

      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of("a")));

      await()
          .atMost(WAIT)
          .until(() -> names(lastUpdate(TypeUrl.CLUSTER)).equals(List.of("a", "b")));
      assertThat(lastUpdate(TypeUrl.CLUSTER).complete()).isTrue();
      assertThat(controlPlane.streamGroups())
          .as("one stream replaced by another")
          .containsExactly("fleet", "fleet");
      assertThat(requestsOf(controlPlane, TypeUrl.CLUSTER))
          .noneSatisfy(request -> assertThat(request.getResourceNamesList()).contains("*"));
    }
  }

  @Test
  void namesNoLongerWantedAreForgottenAndTheUpstreamIsToldSo() throws Exception {
    try (ControlPlane controlPlane = new ControlPlane()) {
      controlPlane.setSnapshot("fleet", clusters("1", "a", "b"));
      UpstreamSession session = open(controlPlane.target(), WAIT);
      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "b")));
      await()
          .atMost(WAIT)
          .until(() -> names(lastUpdate(TypeUrl.ENDPOINT)).equals(List.of("a", "b")));

      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a")));

      await()
          .atMost(WAIT)
          .until(() -> lastUpdate(TypeUrl.ENDPOINT).forgotten().equals(Set.of("b")));
      await()
          .atMost(WAIT)
          .until(
              () ->
                  requestsOf(controlPlane, TypeUrl.ENDPOINT).stream()
                      .anyMatch(request -> request.getResourceNamesList().equals(List.of("a"))));
    }
  }

  @Test
  void aRestartedControlPlaneIsReconnectedToAskedAgainAndItsNewStateArrives() throws Exception {
    try (ControlPlane controlPlane = new ControlPlane()) {
      controlPlane.setSnapshot("fleet", clusters("1", "a"));
      UpstreamSession session = open(controlPlane.target(), WAIT);
      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));
      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.CLUSTER)).equals(List.of("a")));

      controlPlane.stop();
      int before = controlPlane.requests().size();
      controlPlane.setSnapshot("fleet", clusters("2", "a", "c"));
      controlPlane.start();

      await()
          .atMost(WAIT)
          .until(() -> names(lastUpdate(TypeUrl.CLUSTER)).equals(List.of("a", "c")));
      DiscoveryRequest again = controlPlane.requests().get(before);
      assertThat(again.getNode()).isEqualTo(ANNOUNCED);
      assertThat(again.getVersionInfo())
          .as("the version it had, as the spec asks of a reconnecting client")
          .isEqualTo("1");
      assertThat(again.getResponseNonce()).as("nonces do not survive a stream").isEmpty();
    }
  }

  @Test
  void aControlPlaneNamedByDnsIsResolved() throws Exception {
    try (ControlPlane controlPlane = new ControlPlane()) {
      controlPlane.setSnapshot("fleet", clusters("1", "a"));
      UpstreamSession session = open(controlPlane.target().replace("127.0.0.1", "localhost"), WAIT);

      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));

      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.CLUSTER)).equals(List.of("a")));
    }
  }

  @Test
  void whenTheFirstAddressDoesNotAnswerTheNextOneIsTried() throws Exception {
    try (ControlPlane dead = new ControlPlane();
        ControlPlane live = new ControlPlane()) {
      dead.stop();
      live.setSnapshot("fleet", clusters("1", "a"));
      upstream =
          new AdsUpstream(
              AdsUpstream.Settings.plaintext(
                  List.of(dead.target(), live.target()), AdsUpstream.Protocol.SOTW, FAST, WAIT),
              pool,
              timer,
              new SimpleMeterRegistry());
      UpstreamSession session =
          upstream.open(new NodeGroupKey("fleet"), NODE, TENANT, updates::add);

      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));

      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.CLUSTER)).equals(List.of("a")));
      assertThat(live.streamGroups()).containsExactly("fleet");
    }
  }

  @Test
  void aNameTheControlPlaneNeverSendsIsTakenNotToExistAfterTheTimeout() throws Exception {
    try (ControlPlane controlPlane = new ControlPlane()) {
      controlPlane.setSnapshot("fleet", clusters("1", "a"));
      UpstreamSession session = open(controlPlane.target(), Duration.ofMillis(300));

      session.updateInterest(TypeUrl.ROUTE, new Interest(false, Set.of("missing")));

      await().atMost(WAIT).until(() -> lastUpdate(TypeUrl.ROUTE) != null);
      assertThat(lastUpdate(TypeUrl.ROUTE).removed()).containsExactly("missing");
    }
  }

  @Test
  void aListenerLeftOutOfTheFirstAnswerOnAStreamDoesNotExist() throws Exception {
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane()) {
      UpstreamSession session = open(controlPlane.target(), WAIT);
      session.updateInterest(TypeUrl.LISTENER, new Interest(false, Set.of("present", "missing")));
      assertThat(controlPlane.nextRequest(WAIT).getResourceNamesList())
          .containsExactly("missing", "present");

      controlPlane.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.LISTENER.url())
              .setVersionInfo("1")
              .setNonce("n1")
              .addResources(Any.pack(Listener.newBuilder().setName("present").build()))
              .build());

      await().atMost(WAIT).until(() -> lastUpdate(TypeUrl.LISTENER) != null);
      assertThat(names(lastUpdate(TypeUrl.LISTENER))).containsExactly("present");
      assertThat(lastUpdate(TypeUrl.LISTENER).removed()).containsExactly("missing");
    }
  }

  @Test
  void aResponseWithAResourceOfTheWrongTypeIsNackedNamingItAndNotPassedOn() throws Exception {
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane()) {
      UpstreamSession session = open(controlPlane.target(), WAIT);
      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));
      controlPlane.nextRequest(WAIT);

      controlPlane.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("bad")
              .setNonce("n1")
              .addResources(Any.pack(Cluster.newBuilder().setName("fine").build()))
              .addResources(
                  Any.pack(ClusterLoadAssignment.newBuilder().setClusterName("intruder").build()))
              .build());
      DiscoveryRequest nack = controlPlane.nextRequest(WAIT);

      assertThat(nack.hasErrorDetail()).isTrue();
      assertThat(nack.getErrorDetail().getMessage())
          .contains("resource #1")
          .contains("ClusterLoadAssignment");
      assertThat(nack.getResponseNonce()).isEqualTo("n1");
      assertThat(nack.getVersionInfo()).as("the last version accepted: none").isEmpty();
      assertThat(updates).isEmpty();

      controlPlane.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("good")
              .setNonce("n2")
              .addResources(
                  Any.newBuilder()
                      .setTypeUrl(TypeUrl.CLUSTER.url())
                      .setValue(ByteString.copyFromUtf8("\u00ff")))
              .build());
      DiscoveryRequest secondNack = controlPlane.nextRequest(WAIT);
      assertThat(secondNack.getErrorDetail().getMessage()).contains("does not parse");

      controlPlane.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("v3")
              .setNonce("n3")
              .addResources(Any.pack(Cluster.newBuilder().setName("fine").build()))
              .build());
      DiscoveryRequest ack = controlPlane.nextRequest(WAIT);
      assertThat(ack.hasErrorDetail()).isFalse();
      assertThat(ack.getVersionInfo()).isEqualTo("v3");
      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.CLUSTER)).equals(List.of("fine")));
    }
  }

  @Test
  void aWildcardNobodyWantsAnyMoreStaysAskedForAndUpToDateInTheStore() throws Exception {
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane()) {
      UpstreamSession session = open(controlPlane.target(), WAIT);
      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));
      controlPlane.nextRequest(WAIT);
      controlPlane.send(clusterResponse("1", "n1", "a"));
      controlPlane.nextRequest(WAIT);

      session.updateInterest(TypeUrl.CLUSTER, Interest.NONE);
      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));

      // istiod takes any request of Cluster for a wildcard, and one with the current nonce and the
      // same names for an ACK, so the upstream is told nothing: the stream still asks for
      // everything.
      controlPlane.expectNoRequest(Duration.ofMillis(300));
      assertThat(updates)
          .as("nothing dropped from the store")
          .allSatisfy(update -> assertThat(update.forgotten()).isEmpty());
      controlPlane.send(clusterResponse("2", "n2", "a", "b"));
      await()
          .atMost(WAIT)
          .until(() -> names(lastUpdate(TypeUrl.CLUSTER)).equals(List.of("a", "b")));
      assertThat(controlPlane.nextRequest(WAIT).getVersionInfo()).as("the ACK").isEqualTo("2");
    }
  }

  @Test
  void theLastNamesOfATypeAreNeverTakenBackWithAnEmptyList() throws Exception {
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane()) {
      UpstreamSession session = open(controlPlane.target(), WAIT);
      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "b")));
      controlPlane.nextRequest(WAIT);
      controlPlane.send(endpointResponse("1", "n1", false, "a", "b"));
      controlPlane.nextRequest(WAIT);

      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a")));
      assertThat(controlPlane.nextRequest(WAIT).getResourceNamesList()).containsExactly("a");
      await()
          .atMost(WAIT)
          .until(() -> lastUpdate(TypeUrl.ENDPOINT).forgotten().equals(Set.of("b")));
      session.updateInterest(TypeUrl.ENDPOINT, Interest.NONE);

      // An empty list is every resource to java-control-plane, none to go-control-plane and an
      // unsubscription to istiod: "a" stays asked for, and in the store.
      controlPlane.expectNoRequest(Duration.ofMillis(300));
      assertThat(lastUpdate(TypeUrl.ENDPOINT).forgotten()).containsExactly("b");
    }
  }

  @Test
  void aDoNotCacheCopyIsAskedForAgainInTheTwoShapesOneOfWhichEveryControlPlaneAnswers()
      throws Exception {
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane()) {
      UpstreamSession session = open(controlPlane.target(), WAIT);
      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a")));
      controlPlane.nextRequest(WAIT);
      controlPlane.send(endpointResponse("1", "n1", true, "a"));
      controlPlane.nextRequest(WAIT);

      session.refetch(TypeUrl.ENDPOINT);

      DiscoveryRequest versionMismatch = controlPlane.nextRequest(WAIT);
      DiscoveryRequest newWatch = controlPlane.nextRequest(WAIT);
      assertThat(versionMismatch.getResponseNonce())
          .as("go- and java-control-plane answer a version not theirs")
          .isEqualTo("n1");
      assertThat(versionMismatch.getVersionInfo()).isEmpty();
      assertThat(newWatch.getResponseNonce())
          .as("istiod answers an empty nonce as a new watch")
          .isEmpty();
      assertThat(newWatch.getResourceNamesList()).containsExactly("a");
      controlPlane.send(endpointResponse("1", "n2", true, "a"));
      assertThat(controlPlane.nextRequest(WAIT).getVersionInfo()).as("the ACK").isEqualTo("1");
      assertThat(controlPlane.streamsOpened()).as("no new stream once the copy came").isEqualTo(1);
    }
  }

  @Test
  void aDoNotCacheCopyTheUpstreamDoesNotResendIsAskedForOnANewStream() throws Exception {
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane()) {
      UpstreamSession session = open(controlPlane.target(), Duration.ofMillis(500));
      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a")));
      controlPlane.nextRequest(WAIT);
      controlPlane.send(endpointResponse("1", "n1", true, "a"));
      controlPlane.nextRequest(WAIT);

      session.refetch(TypeUrl.ENDPOINT);
      controlPlane.nextRequest(WAIT);
      controlPlane.nextRequest(WAIT);

      DiscoveryRequest onNewStream = controlPlane.nextRequest(WAIT);
      assertThat(controlPlane.streamsOpened()).isEqualTo(2);
      assertThat(
              meters.get("xds.upstream.streams.abandoned").tag("group", "fleet").counter().count())
          .as("the last resort, counted")
          .isEqualTo(1.0);
      assertThat(onNewStream.getResponseNonce()).isEmpty();
      assertThat(onNewStream.getResourceNamesList()).containsExactly("a");
    }
  }

  private static DiscoveryResponse clusterResponse(String version, String nonce, String... names) {
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo(version)
            .setNonce(nonce);
    for (String name : names) {
      response.addResources(Any.pack(Cluster.newBuilder().setName(name).build()));
    }
    return response.build();
  }

  /** Assignments {@code names}, in Resource wrappers marked do_not_cache if {@code doNotCache}. */
  private static DiscoveryResponse endpointResponse(
      String version, String nonce, boolean doNotCache, String... names) {
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .setVersionInfo(version)
            .setNonce(nonce);
    for (String name : names) {
      Any assignment = Any.pack(ClusterLoadAssignment.newBuilder().setClusterName(name).build());
      if (doNotCache) {
        Resource.Builder wrapper = Resource.newBuilder().setName(name).setResource(assignment);
        wrapper.getCacheControlBuilder().setDoNotCache(true);
        response.addResources(Any.pack(wrapper.build()));
      } else {
        response.addResources(assignment);
      }
    }
    return response.build();
  }

  @Test
  void assignmentsAreAskedForAsADirectEnvoyWouldAskOnceTheClustersAreKnown() throws Exception {
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane()) {
      UpstreamSession session = open(controlPlane.target(), Duration.ofMillis(500));
      session.updateInterest(TypeUrl.CLUSTER, new Interest(true, Set.of()));
      controlPlane.nextRequest(WAIT);
      // Before the clusters are known, what the clients ask for is asked for.
      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "stale")));
      assertThat(controlPlane.nextRequest(WAIT).getResourceNamesList())
          .containsExactly("a", "stale");

      controlPlane.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("1")
              .setNonce("n1")
              .addResources(
                  Any.pack(
                      Cluster.newBuilder().setName("a").setType(Cluster.DiscoveryType.EDS).build()))
              .addResources(
                  Any.pack(
                      Cluster.newBuilder()
                          .setName("b")
                          .setType(Cluster.DiscoveryType.EDS)
                          .setEdsClusterConfig(
                              Cluster.EdsClusterConfig.newBuilder().setServiceName("b-endpoints"))
                          .build()))
              .addResources(
                  Any.pack(
                      Cluster.newBuilder()
                          .setName("dns")
                          .setType(Cluster.DiscoveryType.STRICT_DNS)
                          .build()))
              .build());

      // go-control-plane drops a request that leaves out an assignment its snapshot has, and
      // java-control-plane answers none while one asked for is missing: the request names what the
      // clusters reference, and not "stale", which no cluster references: it does not exist.
      assertThat(controlPlane.nextRequest(WAIT).getTypeUrl())
          .as("the Cluster ACK")
          .isEqualTo(TypeUrl.CLUSTER.url());
      DiscoveryRequest endpoints = controlPlane.nextRequest(WAIT);
      assertThat(endpoints.getTypeUrl()).isEqualTo(TypeUrl.ENDPOINT.url());
      assertThat(endpoints.getResourceNamesList()).containsExactly("a", "b-endpoints");
      await()
          .atMost(WAIT)
          .until(
              () ->
                  updates.stream()
                      .anyMatch(
                          update ->
                              update.type().equals(TypeUrl.ENDPOINT)
                                  && update.removed().contains("stale")));
    }
  }

  @Test
  void aResendOfEveryAssignmentTellsTheStoreOnlyWhatChanged() throws Exception {
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane()) {
      UpstreamSession session = open(controlPlane.target(), Duration.ofSeconds(30));
      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "b", "c")));
      controlPlane.nextRequest(WAIT);
      java.util.function.BiFunction<String, Integer, Any> assignment =
          (name, port) -> Any.pack(Assignments.oneEndpoint(name, port));

      controlPlane.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .setVersionInfo("1")
              .setNonce("n1")
              .addResources(assignment.apply("a", 1))
              .addResources(assignment.apply("b", 1))
              .addResources(assignment.apply("c", 1))
              .build());
      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.ENDPOINT)).size() == 3);
      // A SotW control plane resends them all to change one: b moved, and c came out of order.
      controlPlane.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .setVersionInfo("2")
              .setNonce("n2")
              .addResources(assignment.apply("a", 1))
              .addResources(assignment.apply("c", 1))
              .addResources(assignment.apply("b", 2))
              .build());

      await()
          .atMost(WAIT)
          .until(
              () ->
                  updates.stream().filter(update -> update.type().equals(TypeUrl.ENDPOINT)).count()
                      == 2);
      assertThat(names(lastUpdate(TypeUrl.ENDPOINT))).containsExactly("b");
      assertThat(lastUpdate(TypeUrl.ENDPOINT).resources().get(0).body())
          .isEqualTo(assignment.apply("b", 2));
    }
  }

  @Test
  void anAssignmentForgottenAndAskedForAgainIsPassedOnWhenItComesBackUnchanged() throws Exception {
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane()) {
      UpstreamSession session = open(controlPlane.target(), Duration.ofSeconds(30));
      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "b", "c")));
      controlPlane.nextRequest(WAIT);
      DiscoveryResponse all =
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .setVersionInfo("1")
              .setNonce("n1")
              .addResources(Any.pack(Assignments.oneEndpoint("a", 1)))
              .addResources(Any.pack(Assignments.oneEndpoint("b", 1)))
              .addResources(Any.pack(Assignments.oneEndpoint("c", 1)))
              .build();
      controlPlane.send(all);
      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.ENDPOINT)).size() == 3);

      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "c")));
      await()
          .atMost(WAIT)
          .until(() -> lastUpdate(TypeUrl.ENDPOINT).forgotten().equals(Set.of("b")));
      session.updateInterest(TypeUrl.ENDPOINT, new Interest(false, Set.of("a", "b", "c")));
      while (!controlPlane.nextRequest(WAIT).getResourceNamesList().contains("b")) {
        // the ACK and the request that leave b out
      }
      // The same bytes at the same places as the response the session compares with: b among
      // them, which the store no longer holds.
      controlPlane.send(all.toBuilder().setNonce("n2").build());

      await().atMost(WAIT).until(() -> names(lastUpdate(TypeUrl.ENDPOINT)).equals(List.of("b")));
    }
  }
}
