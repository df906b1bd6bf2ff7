package io.xdsproxy.upstream.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.UInt32Value;
import io.envoyproxy.controlplane.cache.Resources;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The go-control-plane models, each rule shown by a real exchange with a raw ADS client on
 * loopback. Tests of a rule all three flavours share run over each; a rule where they differ has a
 * test per behaviour, named for the flavour that has it.
 */
@Execution(ExecutionMode.CONCURRENT)
class GoControlPlaneModelTest {

  private static final Duration WAIT = Duration.ofSeconds(5);

  /** How long "no response" is watched for: the model answers in milliseconds when it answers. */
  private static final Duration QUIET = Duration.ofMillis(300);

  private static final String GROUP = "fleet";
  private static final Node NODE = Node.newBuilder().setId("gocp-client").setCluster(GROUP).build();
  private static final String CDS = Resources.V3.CLUSTER_TYPE_URL;
  private static final String EDS = Resources.V3.ENDPOINT_TYPE_URL;
  private static final String LDS = Resources.V3.LISTENER_TYPE_URL;
  private static final String RDS = Resources.V3.ROUTE_TYPE_URL;
  private static final String SDS = Resources.V3.SECRET_TYPE_URL;
  private static final String RESOURCE_TYPE =
      "type.googleapis.com/envoy.service.discovery.v3.Resource";

  private UpstreamControlPlane controlPlane;
  private ManagedChannel channel;

  @AfterEach
  void closeAll() {
    if (channel != null) {
      channel.shutdownNow();
    }
    if (controlPlane != null) {
      controlPlane.close();
    }
  }

  private void start(ControlPlaneKind kind) throws Exception {
    start(kind.create());
  }

  private void start(UpstreamControlPlane model) {
    controlPlane = model;
    channel = NettyChannelBuilder.forTarget(model.target()).usePlaintext().build();
  }

  // ---- SotW server (pkg/server/sotw/v3/xds.go process) ----

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void theFirstRequestWithNoNamesIsALegacyWildcard(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen("a", "b"));
    Sotw client = new Sotw();

    assertThat(names(client.ask(CDS, "", ""))).containsExactly("a", "b");
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void aStaleNonceWhileAResponseIsUnacknowledgedIsIgnored(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();
    client.ask(CDS, "", "");

    // Accepted, an empty version_info would be answered at once by every flavour.
    client.send(CDS, "", "not-the-nonce");

    client.expectNothing();
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void anEmptyNonceAfterAResponseIsIgnored(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();
    client.ask(CDS, "", "");

    client.send(CDS, "", "");

    client.expectNothing();
  }

  /**
   * The nonce checked is the watch's, and a watch an accepted request created has none until it
   * sends: once the last response is ACKed and nothing new is sent, any nonce is accepted again.
   */
  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void anEmptyNonceIsAcceptedOnceTheLastResponseWasAcknowledged(ControlPlaneKind kind)
      throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();
    client.ack(client.ask(CDS, "", ""));

    assertThat(names(client.ask(CDS, "", ""))).containsExactly("a", "b");
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void withoutAnAckNoFurtherUpdateOfThatTypeIsSent(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();
    DiscoveryResponse first = client.ask(CDS, "", "");

    publish("2", gen("a", "b", "c"), gen());
    client.expectNothing();

    client.ack(first);
    assertThat(names(client.next())).containsExactly("a", "b", "c");
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void openWatchesAreAnsweredInResponseTypeOrder(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen("a", "b"), gen("l"), gen("r"));
    Sotw client = new Sotw();
    client.ack(client.ask(LDS, "", ""));
    client.ack(client.ask(RDS, "", "", "r"), "r");
    client.ack(client.ask(EDS, "", "", "a", "b"), "a", "b");
    client.ack(client.ask(CDS, "", ""));
    client.sync();

    publish("2", Map.of("a", 2, "b", 2), Map.of("a", 2, "b", 2), Map.of("l", 2), Map.of("r", 2));

    assertThat(List.of(client.next(), client.next(), client.next(), client.next()))
        .extracting(DiscoveryResponse::getTypeUrl)
        .containsExactly(CDS, EDS, LDS, RDS);
  }

  /**
   * go-control-plane#46 and #962: a NACK carries the last accepted version, which differs, so the
   * cache answers.
   */
  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013"})
  void aNackIsAnsweredWithTheSameConfigurationAtOnceEveryTime(ControlPlaneKind kind)
      throws Exception {
    start(kind);
    publish("1", gen(), gen("a", "b"));
    Sotw client = new Sotw();
    client.ack(client.ask(EDS, "", "", "a", "b"), "a", "b");
    client.sync();
    publish("2", gen(), Map.of("a", 2, "b", 1));
    DiscoveryResponse rejected = client.next();

    client.nack("1", rejected, "a", "b");
    DiscoveryResponse again = client.next();
    client.nack("1", again, "a", "b");
    DiscoveryResponse andAgain = client.next();

    assertThat(List.of(again, andAgain))
        .allSatisfy(
            response -> {
              assertThat(response.getVersionInfo()).isEqualTo("2");
              assertThat(response.getResourcesList()).isEqualTo(rejected.getResourcesList());
            });
  }

  /** LinearCache compares with what the stream was sent, not with the request's version. */
  @Test
  void theLinearCacheDoesNotAnswerANack() throws Exception {
    start(ControlPlaneKind.GO_LINEAR);
    publish("1", gen(), gen("a", "b"));
    Sotw client = new Sotw();
    DiscoveryResponse accepted = client.ask(EDS, "", "", "a", "b");
    client.ack(accepted, "a", "b");
    client.sync();
    publish("2", gen(), Map.of("a", 2, "b", 1));
    DiscoveryResponse rejected = client.next();
    assertThat(names(rejected)).as("only what changed").containsExactly("a");

    client.nack(accepted.getVersionInfo(), rejected, "a", "b");

    client.expectNothing();
  }

  // ---- Subscriptions (pkg/server/stream/v3/subscription.go; v0.13.4 has none) ----

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_LINEAR"})
  void anEmptyListAfterANameSubscribesToNothing(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();
    DiscoveryResponse first = client.ask(CDS, "", "", "a", "b");
    client.ack(first, "a", "b");
    client.send(CDS, first.getVersionInfo(), first.getNonce());
    client.sync();

    publish("2", Map.of("a", 2, "b", 2), gen());

    client.expectNothing();
  }

  @Test
  void v0134TreatsEveryEmptyListAsAWildcard() throws Exception {
    start(ControlPlaneKind.GO_SNAPSHOT_V013);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();
    DiscoveryResponse first = client.ask(CDS, "", "", "a", "b");
    client.ack(first, "a", "b");
    client.send(CDS, first.getVersionInfo(), first.getNonce());
    client.sync();

    publish("2", Map.of("a", 2, "b", 2), gen());

    assertThat(names(client.next())).containsExactly("a", "b");
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_LINEAR"})
  void anExplicitWildcardSubscribesToEverything(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();

    assertThat(names(client.ask(CDS, "", "", "*"))).containsExactly("a", "b");
  }

  /** v0.13.4's superset rule reads "*" as a name that leaves every resource unnamed. */
  @Test
  void v0134DropsAnExplicitWildcard() throws Exception {
    start(ControlPlaneKind.GO_SNAPSHOT_V013);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();

    client.send(CDS, "", "", "*");

    client.expectNothing();
  }

  /** createResponse appends the subscribed names after the wildcard's whole list. */
  @Test
  void aNameBothSubscribedAndCoveredByTheWildcardIsSentTwice() throws Exception {
    start(ControlPlaneKind.GO_SNAPSHOT);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();

    assertThat(names(client.ask(CDS, "", "", "*", "a"))).containsExactly("a", "b", "a");
  }

  // ---- SnapshotCache (pkg/cache/v3/simple.go createResponse; v0.13.4 CreateWatch, respond) ----

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013"})
  void aRequestThatOmitsAResourceOfTheSnapshotIsDroppedWithoutAWatch(ControlPlaneKind kind)
      throws Exception {
    start(kind);
    publish("1", gen(), gen("a", "b"));
    Sotw client = new Sotw();

    client.send(EDS, "", "", "a");
    client.sync();
    publish("2", gen(), Map.of("a", 2, "b", 2));
    client.expectNothing();

    assertThat(names(client.ask(EDS, "", "", "a", "b", "not-in-the-snapshot")))
        .containsExactly("a", "b");
  }

  @Test
  void theLinearCacheAnswersARequestThatOmitsResourcesOfTheType() throws Exception {
    start(ControlPlaneKind.GO_LINEAR);
    publish("1", gen(), gen("a", "b"));
    Sotw client = new Sotw();

    assertThat(names(client.ask(EDS, "", "", "a"))).containsExactly("a");
  }

  @Test
  void aWatchTheSupersetRuleHoldsBackAtSetSnapshotIsKeptForTheNextSnapshot() throws Exception {
    start(ControlPlaneKind.GO_SNAPSHOT);
    publish("1", gen(), gen("a"));
    Sotw client = new Sotw();
    client.ack(client.ask(EDS, "", "", "a"), "a");
    client.sync();

    publish("2", gen(), gen("a", "b"));
    client.expectNothing();

    publish("3", gen(), Map.of("a", 3));
    DiscoveryResponse response = client.next();
    assertThat(response.getVersionInfo()).isEqualTo("3");
    assertThat(names(response)).containsExactly("a");
  }

  @Test
  void v0134DiscardsAWatchTheSupersetRuleHeldBackAtSetSnapshot() throws Exception {
    start(ControlPlaneKind.GO_SNAPSHOT_V013);
    publish("1", gen(), gen("a"));
    Sotw client = new Sotw();
    client.ack(client.ask(EDS, "", "", "a"), "a");
    client.sync();

    publish("2", gen(), gen("a", "b"));
    publish("3", gen(), Map.of("a", 3));

    client.expectNothing();
  }

  /**
   * go-control-plane#583, fixed at HEAD by pruning what was returned when a name is unsubscribed.
   */
  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_LINEAR"})
  void aNameSubscribedAgainAtAnUnchangedVersionIsSentAgain(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen(), gen("a"));
    Sotw client = new Sotw();
    DiscoveryResponse first = client.ask(EDS, "", "", "a");
    client.ack(first, "a");
    client.send(EDS, first.getVersionInfo(), first.getNonce());

    client.send(EDS, first.getVersionInfo(), first.getNonce(), "a");

    assertThat(names(client.next())).containsExactly("a");
  }

  /**
   * go-control-plane#583: the name is still known from the last answer, and the version has not
   * changed.
   */
  @Test
  void v0134DoesNotAnswerANameSubscribedAgainFromTheLastResponse() throws Exception {
    start(ControlPlaneKind.GO_SNAPSHOT_V013);
    publish("1", gen(), gen("a"));
    Sotw client = new Sotw();
    DiscoveryResponse first = client.ask(EDS, "", "", "a");
    client.ack(first, "a");
    client.send(EDS, first.getVersionInfo(), first.getNonce());

    client.send(EDS, first.getVersionInfo(), first.getNonce(), "a");

    client.expectNothing();
  }

  /**
   * A snapshot republished at the same version answers no watch; the next request at that version
   * gets what the stream was not sent yet: the new endpoint alone, but every cluster (full state).
   */
  @Test
  void aRequestAtTheCurrentVersionGetsWhatTheStreamWasNotSentOrEverythingForFullStateTypes()
      throws Exception {
    start(ControlPlaneKind.GO_SNAPSHOT);
    publish("1", gen("a"), gen("a"));
    Sotw client = new Sotw();
    DiscoveryResponse clusters = client.ask(CDS, "", "", "a", "b");
    client.ack(clusters, "a", "b");
    DiscoveryResponse endpoints = client.ask(EDS, "", "", "a", "b");
    client.ack(endpoints, "a", "b");
    client.sync();

    publish("1", gen("a", "b"), gen("a", "b"));
    client.expectNothing();

    assertThat(names(client.ask(CDS, "1", clusters.getNonce(), "a", "b")))
        .containsExactly("a", "b");
    assertThat(names(client.ask(EDS, "1", endpoints.getNonce(), "a", "b"))).containsExactly("b");
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013"})
  void aSnapshotChangeResendsEveryOpenTypeWhole(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen("a", "b"));
    Sotw client = new Sotw();
    client.ack(client.ask(CDS, "", ""));
    client.ack(client.ask(EDS, "", "", "a", "b"), "a", "b");
    client.sync();

    publish("2", gen("a", "b"), Map.of("a", 2, "b", 1));

    assertThat(names(client.next())).as("clusters, unchanged").containsExactly("a", "b");
    assertThat(names(client.next())).as("endpoints, one changed").containsExactly("a", "b");
  }

  @Test
  void theLinearCacheSendsOnlyTheEndpointsThatChangedButEveryCluster() throws Exception {
    start(ControlPlaneKind.GO_LINEAR);
    publish("1", gen("a", "b"), gen("a", "b"));
    Sotw client = new Sotw();
    client.ack(client.ask(CDS, "", ""));
    client.ack(client.ask(EDS, "", "", "a", "b"), "a", "b");
    client.sync();

    publish("2", Map.of("a", 2, "b", 1), Map.of("a", 2, "b", 1));

    DiscoveryResponse clusters = client.next();
    DiscoveryResponse endpoints = client.next();
    assertThat(clusters.getTypeUrl()).isEqualTo(CDS);
    assertThat(names(clusters)).containsExactly("a", "b");
    assertThat(names(endpoints)).containsExactly("a");
    assertThat(endpoints.getVersionInfo()).startsWith(GoLinearCaches.VERSION_PREFIX);
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013"})
  void aRequestWithoutVersionIsAnsweredWithEverySubscribedResource(ControlPlaneKind kind)
      throws Exception {
    start(kind);
    publish("1", gen(), gen("a", "b"));
    Sotw client = new Sotw();
    DiscoveryResponse first = client.ask(EDS, "", "", "a", "b");
    client.ack(first, "a", "b");

    assertThat(names(client.ask(EDS, "", first.getNonce(), "a", "b"))).containsExactly("a", "b");
  }

  /**
   * replyEvenIfEmpty: the client may know nothing, but the answer holds only what changed for the
   * stream.
   */
  @Test
  void theLinearCacheAnswersARequestWithoutVersionWithAnEmptyResponseWhenNothingChanged()
      throws Exception {
    start(ControlPlaneKind.GO_LINEAR);
    publish("1", gen(), gen("a", "b"));
    Sotw client = new Sotw();
    DiscoveryResponse first = client.ask(EDS, "", "", "a", "b");
    client.ack(first, "a", "b");

    DiscoveryResponse again = client.ask(EDS, "", first.getNonce(), "a", "b");

    assertThat(again.getResourcesList()).isEmpty();
    assertThat(again.getVersionInfo()).isEqualTo(first.getVersionInfo());
  }

  @Test
  void theLinearCacheAnswersAVersionWithoutItsPrefixEvenIfNothingChanged() throws Exception {
    start(ControlPlaneKind.GO_LINEAR);
    publish("1", gen(), gen("a", "b"));
    Sotw client = new Sotw();
    DiscoveryResponse first = client.ask(EDS, "", "", "a", "b");
    client.ack(first, "a", "b");

    client.send(EDS, first.getVersionInfo(), first.getNonce(), "a", "b");
    client.expectNothing();

    assertThat(client.ask(EDS, "another-server-7", "", "a", "b").getResourcesList()).isEmpty();
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_LINEAR"})
  void aNewStreamAtTheCurrentVersionIsAnsweredWithEverything(ControlPlaneKind kind)
      throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen());
    String version = new Sotw().ask(CDS, "", "").getVersionInfo();

    assertThat(names(new Sotw().ask(CDS, version, ""))).containsExactly("a", "b");
  }

  @Test
  void v0134DoesNotAnswerAWildcardOnANewStreamAtTheCurrentVersion() throws Exception {
    start(ControlPlaneKind.GO_SNAPSHOT_V013);
    publish("1", gen("a", "b"), gen());
    Sotw client = new Sotw();

    client.send(CDS, "1", "");

    client.expectNothing();
  }

  /**
   * go-control-plane#1498's own test, with a cache that answers for the subscription the request
   * replaced.
   */
  @Test
  void aResponseNamingAResourceNoLongerSubscribedIsDropped() throws Exception {
    StubCache cache =
        new StubCache((watch, watches) -> watch.answer(watches.get(0).request(), "s"));
    start(GoControlPlaneModel.headServerOver("a cache answering for an old subscription", cache));
    Sotw client = new Sotw();
    DiscoveryResponse first = client.ask(CDS, "", "", "s");

    client.send(CDS, first.getVersionInfo(), first.getNonce());

    client.expectNothing();
    assertThat(cache.watches).hasSize(2);
  }

  /**
   * go's loop stops reading a watch's channel once a request replaces the watch: an answer the
   * cache put there just before is never sent, even one that still matches the subscription. The
   * stub makes the race certain by answering the first watch while the second is created.
   */
  @Test
  void anAnswerOfAWatchThatARequestReplacedIsNeverSent() throws Exception {
    StubCache cache =
        new StubCache(
            (watch, watches) -> {
              if (watches.size() == 2) {
                watches.get(0).answer(watches.get(0).request(), "s");
              } else if (watches.size() == 3) {
                watch.answer(watch.request(), "s");
              }
            });
    start(GoControlPlaneModel.headServerOver("a cache answering a replaced watch", cache));
    Sotw client = new Sotw();
    client.send(CDS, "", "", "s");

    client.send(CDS, "", "", "s");
    client.expectNothing();

    client.send(CDS, "", "", "s");
    assertThat(names(client.next())).as("the current watch's answer").containsExactly("s");
  }

  // ---- Delta server (pkg/server/delta/v3/server.go processDelta) and caches ----

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void theFirstWildcardDeltaRequestIsAnsweredEvenIfEmpty(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a"), gen());
    Delta client = new Delta();

    DeltaDiscoveryResponse response = client.ask(LDS, List.of(), List.of());

    assertThat(response.getResourcesList()).isEmpty();
    assertThat(response.getRemovedResourcesList()).isEmpty();
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void aDeltaRequestForANameTheServerLacksGetsNoResponse(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen(), gen("a"));
    Delta client = new Delta();

    client.send(EDS, "", List.of("not-in-the-snapshot"), List.of());

    client.expectNothing();
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void initialResourceVersionsSkipWhatTheClientHasAndReportWhatVanished(ControlPlaneKind kind)
      throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen());
    DeltaDiscoveryResponse first = new Delta().ask(CDS, List.of(), List.of());
    assertThat(first.getResourcesList())
        .allSatisfy(
            resource ->
                assertThat(resource.getVersion())
                    .as("the content hash")
                    .isEqualTo(sha256(resource.getResource().getValue().toByteArray())));
    Map<String, String> known = new TreeMap<>();
    first
        .getResourcesList()
        .forEach(resource -> known.put(resource.getName(), resource.getVersion()));

    publish("2", gen("a", "c"), gen());
    Delta reconnected = new Delta();
    reconnected.send(
        DeltaDiscoveryRequest.newBuilder()
            .setNode(NODE)
            .setTypeUrl(CDS)
            .putAllInitialResourceVersions(known)
            .build());
    DeltaDiscoveryResponse response = reconnected.next();

    assertThat(response.getResourcesList()).extracting(Resource::getName).containsExactly("c");
    assertThat(response.getRemovedResourcesList()).containsExactly("b");
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void aDeltaRequestIsAnsweredWhateverItsNonce(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen(), gen("a", "b"));
    Delta client = new Delta();
    client.ask(EDS, List.of("a"), List.of());

    client.send(EDS, "not-a-nonce-it-sent", List.of("b"), List.of());

    assertThat(client.next().getResourcesList()).extracting(Resource::getName).containsExactly("b");
  }

  /**
   * What the client has is recorded as the response is sent: the NACK changes nothing, so nothing
   * is sent.
   */
  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void aNackedDeltaResourceIsNotSentAgain(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen(), gen("a"));
    Delta client = new Delta();
    DeltaDiscoveryResponse response = client.ask(EDS, List.of("a"), List.of());

    client.send(
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(EDS)
            .setResponseNonce(response.getNonce())
            .setErrorDetail(com.google.rpc.Status.newBuilder().setMessage("rejected"))
            .build());

    client.expectNothing();
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void unsubscribingANameWhileWildcardSendsItAgain(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen("a", "b"), gen());
    Delta client = new Delta();
    DeltaDiscoveryResponse all = client.ask(CDS, List.of(), List.of());
    client.send(CDS, all.getNonce(), List.of("a"), List.of());

    client.send(CDS, all.getNonce(), List.of(), List.of("a"));

    DeltaDiscoveryResponse response = client.next();
    assertThat(response.getResourcesList()).extracting(Resource::getName).containsExactly("a");
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void aNameInSubscribeAndUnsubscribeOfOneRequestEndsUnsubscribed(ControlPlaneKind kind)
      throws Exception {
    start(kind);
    publish("1", gen(), gen("a", "b"));
    Delta client = new Delta();
    DeltaDiscoveryResponse first = client.ask(EDS, List.of("a"), List.of());

    client.send(EDS, first.getNonce(), List.of("b"), List.of("b"));
    publish("2", gen(), Map.of("a", 1, "b", 2));
    client.expectNothing();

    publish("3", gen(), Map.of("a", 3, "b", 3));
    assertThat(client.next().getResourcesList()).extracting(Resource::getName).containsExactly("a");
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void aRemovalIsReportedOnlyForNamesTheClientWasSent(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen(), gen("a", "b"));
    Delta client = new Delta();
    DeltaDiscoveryResponse first = client.ask(EDS, List.of("a", "never-existed"), List.of());
    client.send(EDS, first.getNonce(), List.of(), List.of());

    publish("2", gen(), gen("b"));

    DeltaDiscoveryResponse response = client.next();
    assertThat(response.getResourcesList()).isEmpty();
    assertThat(response.getRemovedResourcesList()).containsExactly("a");
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_LINEAR"})
  void aNameUnsubscribedThenSubscribedAgainIsSentAgain(ControlPlaneKind kind) throws Exception {
    start(kind);
    publish("1", gen(), gen("a"));
    Delta client = new Delta();
    DeltaDiscoveryResponse first = client.ask(EDS, List.of("a"), List.of());
    client.send(EDS, first.getNonce(), List.of(), List.of("a"));

    client.send(EDS, first.getNonce(), List.of("a"), List.of());

    assertThat(client.next().getResourcesList()).extracting(Resource::getName).containsExactly("a");
  }

  /** v0.13.4 keeps the unsubscribed name's version, so the unchanged resource is not sent again. */
  @Test
  void v0134DoesNotSendANameUnsubscribedThenSubscribedAgain() throws Exception {
    start(ControlPlaneKind.GO_SNAPSHOT_V013);
    publish("1", gen(), gen("a"));
    Delta client = new Delta();
    DeltaDiscoveryResponse first = client.ask(EDS, List.of("a"), List.of());
    client.send(EDS, first.getNonce(), List.of(), List.of("a"));

    client.send(EDS, first.getNonce(), List.of("a"), List.of());

    client.expectNothing();
  }

  // ---- do_not_cache (the suite's extension), records, stop and start ----

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void aResourceMarkedDoNotCacheGoesOutInAResourceWrapper(ControlPlaneKind kind) throws Exception {
    start(kind);
    controlPlane.setDoNotCache(Set.of("a"));
    publish("1", gen("a", "b"), gen());

    List<Any> sotw = new Sotw().ask(CDS, "", "").getResourcesList();
    List<Resource> delta = new Delta().ask(CDS, List.of(), List.of()).getResourcesList();

    assertThat(sotw).extracting(Any::getTypeUrl).containsExactly(RESOURCE_TYPE, CDS);
    Resource wrapped = sotw.get(0).unpack(Resource.class);
    assertThat(wrapped.getCacheControl().getDoNotCache()).isTrue();
    assertThat(Cluster.parseFrom(wrapped.getResource().getValue()).getName()).isEqualTo("a");
    assertThat(delta)
        .extracting(resource -> resource.getCacheControl().getDoNotCache())
        .containsExactly(true, false);
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void aRequestWithoutTypeUrlEndsTheStream(ControlPlaneKind kind) throws Exception {
    start(kind);
    Sotw sotw = new Sotw();
    Delta delta = new Delta();

    sotw.send(DiscoveryRequest.newBuilder().setNode(NODE).build());
    delta.send(DeltaDiscoveryRequest.newBuilder().setNode(NODE).build());

    assertThat(sotw.end.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).getCode())
        .isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(delta.end.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).getCode())
        .isEqualTo(Status.Code.INVALID_ARGUMENT);
  }

  @ParameterizedTest
  @EnumSource(
      value = ControlPlaneKind.class,
      names = {"GO_SNAPSHOT", "GO_SNAPSHOT_V013", "GO_LINEAR"})
  void streamsAndRequestsAreRecordedAndAStopCutsEveryStreamUntilTheNextStart(ControlPlaneKind kind)
      throws Exception {
    start(kind);
    publish("1", gen("a"), gen());
    String target = controlPlane.target();
    Sotw sotw = new Sotw();
    Delta delta = new Delta();
    sotw.ask(CDS, "", "");
    delta.ask(CDS, List.of(), List.of());

    assertThat(controlPlane.requests()).hasSize(1);
    assertThat(controlPlane.deltaRequests()).hasSize(1);
    assertThat(controlPlane.streamGroups()).containsExactly(GROUP, GROUP);
    assertThat(controlPlane.openStreamNodeIds()).containsExactly(NODE.getId(), NODE.getId());
    assertThat(controlPlane.responsesSent()).isEqualTo(2);

    controlPlane.stop();
    assertThat(sotw.end.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).isOk()).isFalse();
    assertThat(delta.end.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).isOk()).isFalse();
    await().atMost(WAIT).until(() -> controlPlane.openStreams() == 0);

    controlPlane.start();
    assertThat(controlPlane.target()).isEqualTo(target);
    assertThat(names(new Sotw().ask(CDS, "", ""))).containsExactly("a");
    assertThat(controlPlane.streamNodeIds()).hasSize(3);
    assertThat(controlPlane.openStreams()).isEqualTo(1);
  }

  // ---- Helpers ----

  /** Resource names at generation 1: what {@link #publish} builds them from. */
  private static Map<String, Integer> gen(String... names) {
    Map<String, Integer> generations = new TreeMap<>();
    Arrays.stream(names).forEach(name -> generations.put(name, 1));
    return generations;
  }

  private void publish(
      String version, Map<String, Integer> clusters, Map<String, Integer> endpoints) {
    publish(version, clusters, endpoints, gen(), gen());
  }

  /**
   * Publishes a snapshot whose resources carry their generation in their content, so a new one
   * differs.
   */
  private void publish(
      String version,
      Map<String, Integer> clusters,
      Map<String, Integer> endpoints,
      Map<String, Integer> listeners,
      Map<String, Integer> routes) {
    controlPlane.setSnapshot(
        GROUP,
        Snapshot.create(
            clusters.entrySet().stream()
                .map(
                    e ->
                        Cluster.newBuilder()
                            .setName(e.getKey())
                            .setType(Cluster.DiscoveryType.EDS)
                            .setPerConnectionBufferLimitBytes(UInt32Value.of(e.getValue()))
                            .build())
                .toList(),
            endpoints.entrySet().stream()
                .map(
                    e ->
                        ClusterLoadAssignment.newBuilder()
                            .setClusterName(e.getKey())
                            .addEndpoints(
                                LocalityLbEndpoints.newBuilder()
                                    .setLoadBalancingWeight(UInt32Value.of(e.getValue())))
                            .build())
                .toList(),
            listeners.entrySet().stream()
                .map(
                    e ->
                        Listener.newBuilder()
                            .setName(e.getKey())
                            .setStatPrefix("generation-" + e.getValue())
                            .build())
                .toList(),
            routes.entrySet().stream()
                .map(
                    e ->
                        RouteConfiguration.newBuilder()
                            .setName(e.getKey())
                            .addInternalOnlyHeaders("generation-" + e.getValue())
                            .build())
                .toList(),
            List.of(),
            version));
  }

  private static List<String> names(DiscoveryResponse response) {
    return response.getResourcesList().stream().map(GoControlPlaneModelTest::name).toList();
  }

  private static String name(Any any) {
    try {
      if (any.getTypeUrl().equals(RESOURCE_TYPE)) {
        return any.unpack(Resource.class).getName();
      }
      return switch (any.getTypeUrl().substring(any.getTypeUrl().lastIndexOf('/') + 1)) {
        case "envoy.config.cluster.v3.Cluster" -> Cluster.parseFrom(any.getValue()).getName();
        case "envoy.config.endpoint.v3.ClusterLoadAssignment" ->
            ClusterLoadAssignment.parseFrom(any.getValue()).getClusterName();
        case "envoy.config.listener.v3.Listener" -> Listener.parseFrom(any.getValue()).getName();
        case "envoy.config.route.v3.RouteConfiguration" ->
            RouteConfiguration.parseFrom(any.getValue()).getName();
        default -> throw new AssertionError("unexpected resource type " + any.getTypeUrl());
      };
    } catch (InvalidProtocolBufferException e) {
      throw new AssertionError(e);
    }
  }

  private static String sha256(byte[] bytes) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
  }

  private static String brief(DiscoveryRequest request) {
    return "→ "
        + request.getTypeUrl().substring(request.getTypeUrl().lastIndexOf('.') + 1)
        + " names="
        + request.getResourceNamesList()
        + " version="
        + request.getVersionInfo()
        + " nonce="
        + request.getResponseNonce()
        + (request.hasErrorDetail() ? " NACK" : "");
  }

  private static String brief(DiscoveryResponse response) {
    return "← "
        + response.getTypeUrl().substring(response.getTypeUrl().lastIndexOf('.') + 1)
        + " names="
        + names(response)
        + " version="
        + response.getVersionInfo()
        + " nonce="
        + response.getNonce();
  }

  /**
   * A cache for HEAD's server that answers as a script says, given the watch just created and every
   * watch so far (the test's {@code ConfigWatcher}, as go's server tests write them).
   */
  private static final class StubCache implements GoCache {
    private final BiConsumer<StubWatch, List<StubWatch>> script;
    private final List<StubWatch> watches = new CopyOnWriteArrayList<>();

    StubCache(BiConsumer<StubWatch, List<StubWatch>> script) {
      this.script = script;
    }

    @Override
    public Runnable createWatch(
        DiscoveryRequest request,
        GoSubscription.View subscription,
        Consumer<GoResponses.Sotw> responder) {
      StubWatch watch = new StubWatch(request, responder);
      watches.add(watch);
      script.accept(watch, watches);
      return () -> {};
    }

    @Override
    public Runnable createDeltaWatch(
        DeltaDiscoveryRequest request,
        GoSubscription.View subscription,
        Consumer<GoResponses.Delta> responder) {
      return () -> {};
    }
  }

  private record StubWatch(DiscoveryRequest request, Consumer<GoResponses.Sotw> responder) {

    /** Answers with clusters {@code names}, computed for {@code forRequest}, at version "1". */
    void answer(DiscoveryRequest forRequest, String... names) {
      List<GoResource> resources =
          Arrays.stream(names)
              .map(name -> GoResource.of(name, Cluster.newBuilder().setName(name).build(), false))
              .toList();
      Map<String, String> returned = new TreeMap<>();
      Arrays.stream(names).forEach(name -> returned.put(name, "1"));
      responder.accept(new GoResponses.Sotw(forRequest, "1", resources, returned));
    }
  }

  /**
   * A raw SotW ADS client: sends what the test writes, queues what the model answers, logs both for
   * failures.
   */
  private final class Sotw {
    private final BlockingQueue<DiscoveryResponse> received = new LinkedBlockingQueue<>();
    private final CompletableFuture<Status> end = new CompletableFuture<>();
    private final List<String> exchanges = new CopyOnWriteArrayList<>();
    private final StreamObserver<DiscoveryRequest> requests;
    private String syncNonce = "";

    Sotw() {
      requests =
          AggregatedDiscoveryServiceGrpc.newStub(channel)
              .streamAggregatedResources(
                  new StreamObserver<>() {
                    @Override
                    public void onNext(DiscoveryResponse response) {
                      exchanges.add(brief(response));
                      received.add(response);
                    }

                    @Override
                    public void onError(Throwable error) {
                      end.complete(Status.fromThrowable(error));
                    }

                    @Override
                    public void onCompleted() {
                      end.complete(Status.OK);
                    }
                  });
    }

    void send(DiscoveryRequest request) {
      exchanges.add(brief(request));
      requests.onNext(request);
    }

    void send(String typeUrl, String version, String nonce, String... names) {
      send(
          DiscoveryRequest.newBuilder()
              .setNode(NODE)
              .setTypeUrl(typeUrl)
              .setVersionInfo(version)
              .setResponseNonce(nonce)
              .addAllResourceNames(List.of(names))
              .build());
    }

    DiscoveryResponse ask(String typeUrl, String version, String nonce, String... names)
        throws InterruptedException {
      send(typeUrl, version, nonce, names);
      return next();
    }

    void ack(DiscoveryResponse response, String... names) {
      send(response.getTypeUrl(), response.getVersionInfo(), response.getNonce(), names);
    }

    /**
     * A NACK as clients send it: the last accepted version, the rejected response's nonce, and the
     * error.
     */
    void nack(String lastAccepted, DiscoveryResponse rejected, String... names) {
      send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(rejected.getTypeUrl())
              .setVersionInfo(lastAccepted)
              .setResponseNonce(rejected.getNonce())
              .addAllResourceNames(List.of(names))
              .setErrorDetail(com.google.rpc.Status.newBuilder().setMessage("rejected"))
              .build());
    }

    /**
     * Returns once the model has handled everything this client sent, so that a snapshot published
     * next meets the watches those requests left: the stream handles requests in order, and every
     * flavour answers a wildcard SDS request without version at once, behind the answers to what
     * came before.
     */
    void sync() throws InterruptedException {
      send(SDS, "", syncNonce);
      DiscoveryResponse response = next();
      assertThat(response.getTypeUrl())
          .as("the answer to the sync request; exchanges:%n%s", String.join("\n", exchanges))
          .isEqualTo(SDS);
      syncNonce = response.getNonce();
    }

    DiscoveryResponse next() throws InterruptedException {
      DiscoveryResponse response = received.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(response)
          .as(
              "a response from %s within %s; exchanges:%n%s",
              controlPlane.name(), WAIT, String.join("\n", exchanges))
          .isNotNull();
      return response;
    }

    void expectNothing() throws InterruptedException {
      DiscoveryResponse response = received.poll(QUIET.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(response)
          .as(
              "no response from %s; exchanges:%n%s",
              controlPlane.name(), String.join("\n", exchanges))
          .isNull();
    }
  }

  /** A raw Delta ADS client. */
  private final class Delta {
    private final BlockingQueue<DeltaDiscoveryResponse> received = new LinkedBlockingQueue<>();
    private final CompletableFuture<Status> end = new CompletableFuture<>();
    private final List<String> exchanges = new CopyOnWriteArrayList<>();
    private final StreamObserver<DeltaDiscoveryRequest> requests;

    Delta() {
      requests =
          AggregatedDiscoveryServiceGrpc.newStub(channel)
              .deltaAggregatedResources(
                  new StreamObserver<>() {
                    @Override
                    public void onNext(DeltaDiscoveryResponse response) {
                      exchanges.add(
                          "← "
                              + response.getTypeUrl()
                              + " resources="
                              + response.getResourcesList().stream().map(Resource::getName).toList()
                              + " removed="
                              + response.getRemovedResourcesList()
                              + " nonce="
                              + response.getNonce());
                      received.add(response);
                    }

                    @Override
                    public void onError(Throwable error) {
                      end.complete(Status.fromThrowable(error));
                    }

                    @Override
                    public void onCompleted() {
                      end.complete(Status.OK);
                    }
                  });
    }

    void send(DeltaDiscoveryRequest request) {
      exchanges.add(
          "→ "
              + request.getTypeUrl()
              + " subscribe="
              + request.getResourceNamesSubscribeList()
              + " unsubscribe="
              + request.getResourceNamesUnsubscribeList()
              + " nonce="
              + request.getResponseNonce()
              + (request.hasErrorDetail() ? " NACK" : ""));
      requests.onNext(request);
    }

    void send(String typeUrl, String nonce, List<String> subscribe, List<String> unsubscribe) {
      send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(NODE)
              .setTypeUrl(typeUrl)
              .setResponseNonce(nonce)
              .addAllResourceNamesSubscribe(subscribe)
              .addAllResourceNamesUnsubscribe(unsubscribe)
              .build());
    }

    DeltaDiscoveryResponse ask(String typeUrl, List<String> subscribe, List<String> unsubscribe)
        throws InterruptedException {
      send(typeUrl, "", subscribe, unsubscribe);
      return next();
    }

    DeltaDiscoveryResponse next() throws InterruptedException {
      DeltaDiscoveryResponse response = received.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(response)
          .as(
              "a Delta response from %s within %s; exchanges:%n%s",
              controlPlane.name(), WAIT, String.join("\n", exchanges))
          .isNotNull();
      return response;
    }

    void expectNothing() throws InterruptedException {
      DeltaDiscoveryResponse response = received.poll(QUIET.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(response)
          .as(
              "no Delta response from %s; exchanges:%n%s",
              controlPlane.name(), String.join("\n", exchanges))
          .isNull();
    }
  }
}
