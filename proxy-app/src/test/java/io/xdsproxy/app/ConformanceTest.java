package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.Status.Code;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.VariantClient;
import io.xdsproxy.app.testing.VariantClient.Variant;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The rules of the xDS transport protocol that hold in every variant, each stated once and run
 * against all four (SotW and Delta, ADS and per-type), by a client that applies responses as a real
 * one would. Each test is named after what the spec section it checks requires; the rules peculiar
 * to one variant are in {@link SotwAdsTest}, {@link DeltaAdsTest} and {@link MakeBeforeBreakTest}.
 */
class ConformanceTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration QUIET = Duration.ofMillis(600);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    proxy =
        fixture.proxy(against(controlPlane.target()).withNotFoundTimeout(Duration.ofMillis(300)));
  }

  /** Clusters, and endpoints for each on {@code port}. */
  private void publish(String version, int port, String... clusters) {
    controlPlane.setSnapshot("fleet", Resources.clustersAt(port, version, clusters));
  }

  private VariantClient client(Variant variant, String id) {
    return new VariantClient(variant, proxy.xdsPort(), node(id, "fleet"));
  }

  private static int port(Map<String, com.google.protobuf.Any> held, String name) {
    try {
      return held.get(name)
          .unpack(ClusterLoadAssignment.class)
          .getEndpoints(0)
          .getLbEndpoints(0)
          .getEndpoint()
          .getAddress()
          .getSocketAddress()
          .getPortValue();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  // "How the client specifies what resources to return", "Grouping Resources into Responses",
  // "Deleting Resources"
  @ParameterizedTest
  @EnumSource(Variant.class)
  void aLegacyWildcardGetsEveryClusterAndFollowsAdditionsAndDeletions(Variant variant) {
    publish("1", 1000, "a", "b");
    try (VariantClient client = client(variant, "n1")) {
      client.subscribe(TypeUrl.CLUSTER);
      client.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> held.keySet().equals(Set.of("a", "b")));

      publish("2", 1000, "a", "c");

      client.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> held.keySet().equals(Set.of("a", "c")));
    }
  }

  // "How the client specifies what resources to return": * and a name
  @ParameterizedTest
  @EnumSource(Variant.class)
  void anExplicitWildcardWithANameGetsEveryCluster(Variant variant) {
    publish("1", 1000, "a", "b");
    try (VariantClient client = client(variant, "n1")) {
      client.subscribe(TypeUrl.CLUSTER, "*", "a");

      client.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> held.keySet().equals(Set.of("a", "b")));
    }
  }

  // "How the client specifies what resources to return": named resources only
  @ParameterizedTest
  @EnumSource(Variant.class)
  void namedEndpointsGetThoseAloneAndTheirChanges(Variant variant) {
    publish("1", 1000, "a", "b");
    try (VariantClient client = client(variant, "n1")) {
      client.subscribe(TypeUrl.ENDPOINT, "a");
      client.awaitHeld(TypeUrl.ENDPOINT, WAIT, held -> held.keySet().equals(Set.of("a")));

      publish("2", 2000, "a", "b");

      client.awaitHeld(TypeUrl.ENDPOINT, WAIT, held -> port(held, "a") == 2000);
      assertThat(client.held(TypeUrl.ENDPOINT)).containsOnlyKeys("a");
    }
  }

  // "Unsubscribing From Resources"
  @ParameterizedTest
  @EnumSource(Variant.class)
  void anUnsubscribedNameGetsNoMoreUpdates(Variant variant) {
    publish("1", 1000, "a", "b");
    try (VariantClient client = client(variant, "n1")) {
      client.subscribe(TypeUrl.ENDPOINT, "a", "b");
      client.awaitHeld(TypeUrl.ENDPOINT, WAIT, held -> held.keySet().equals(Set.of("a", "b")));

      client.unsubscribe(TypeUrl.ENDPOINT, "b");
      client.expectNoResponse(TypeUrl.ENDPOINT, QUIET);
      controlPlane.setSnapshot(
          "fleet",
          Snapshot.create(
              List.of(Resources.cluster("a"), Resources.cluster("b")),
              List.of(Resources.endpoints("a", 1000), Resources.endpoints("b", 3000)),
              List.of(),
              List.of(),
              List.of(),
              "2"));

      client.expectNoResponse(TypeUrl.ENDPOINT, QUIET);
    }
  }

  // "How the client specifies what resources to return": newly requested resources are sent even if
  // the server sent them before and they did not change
  @ParameterizedTest
  @EnumSource(Variant.class)
  void aNewlySubscribedNameIsSentThoughTheProxyAlreadyHasItUnchanged(Variant variant) {
    publish("1", 1000, "a", "b");
    try (VariantClient other = client(variant, "n2");
        VariantClient client = client(variant, "n1")) {
      other.subscribe(TypeUrl.ENDPOINT, "a", "b");
      other.awaitHeld(TypeUrl.ENDPOINT, WAIT, held -> held.size() == 2);
      client.subscribe(TypeUrl.ENDPOINT, "a");
      client.awaitHeld(TypeUrl.ENDPOINT, WAIT, held -> held.keySet().equals(Set.of("a")));

      client.subscribe(TypeUrl.ENDPOINT, "b");

      client.awaitHeld(TypeUrl.ENDPOINT, WAIT, held -> held.keySet().equals(Set.of("a", "b")));
    }
  }

  // "When to send an update"
  @ParameterizedTest
  @EnumSource(Variant.class)
  void noResponseWhenTheUpstreamRepublishesTheSameContent(Variant variant) {
    publish("1", 1000, "a");
    try (VariantClient client = client(variant, "n1")) {
      client.subscribe(TypeUrl.CLUSTER);
      client.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> held.size() == 1);

      publish("2", 1000, "a");

      client.expectNoResponse(TypeUrl.CLUSTER, QUIET);
    }
  }

  // "ACK/NACK and resource type instance version": a NACKed version is not resent; the next one is
  @ParameterizedTest
  @EnumSource(Variant.class)
  void aRejectedVersionIsNotResentButTheNextVersionIs(Variant variant) {
    publish("1", 1000, "a");
    try (VariantClient client = client(variant, "n1")) {
      client.rejectNext(TypeUrl.CLUSTER);
      client.subscribe(TypeUrl.CLUSTER);
      assertThat(client.receive(TypeUrl.CLUSTER, WAIT))
          .as("the first response is rejected")
          .isFalse();

      client.expectNoResponse(TypeUrl.CLUSTER, QUIET);
      publish("2", 1000, "a", "b");

      // What changed is sent: SotW's full state carries a again, Delta sends b alone (a is
      // unchanged since the version the client rejected).
      client.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> held.containsKey("b"));
      assertThat(client.held(TypeUrl.CLUSTER))
          .containsOnlyKeys(variant.delta() ? Set.of("b") : Set.of("a", "b"));
    }
  }

  // "Knowing When a Requested Resource Does Not Exist"
  @ParameterizedTest
  @EnumSource(Variant.class)
  void aNamedClusterTheUpstreamLacksIsNeverHeldAndTheOthersAre(Variant variant) {
    publish("1", 1000, "a");
    try (VariantClient client = client(variant, "n1")) {
      client.subscribe(TypeUrl.CLUSTER, "a");
      client.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> held.keySet().equals(Set.of("a")));

      client.subscribe(TypeUrl.CLUSTER, "ghost");

      client.receive(TypeUrl.CLUSTER, WAIT);
      assertThat(client.held(TypeUrl.CLUSTER)).containsOnlyKeys("a");
    }
  }

  // "Basic Protocol Overview": the node, first on each stream, never changing
  @ParameterizedTest
  @EnumSource(Variant.class)
  void aFirstRequestWithoutANodeAndALaterOtherNodeAreRefused(Variant variant) {
    publish("1", 1000, "a");
    try (VariantClient anonymous = client(variant, "n0");
        VariantClient changing = client(variant, "n1")) {
      if (variant.delta()) {
        anonymous.sendRawDelta(
            TypeUrl.CLUSTER,
            DeltaDiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).build());
      } else {
        anonymous.sendRawSotw(
            TypeUrl.CLUSTER,
            DiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).build());
      }
      assertThat(anonymous.awaitEnd(TypeUrl.CLUSTER, WAIT).getCode())
          .isEqualTo(Code.INVALID_ARGUMENT);

      changing.subscribe(TypeUrl.CLUSTER);
      changing.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> held.size() == 1);
      if (variant.delta()) {
        changing.sendRawDelta(
            TypeUrl.CLUSTER,
            DeltaDiscoveryRequest.newBuilder()
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .setNode(node("somebody-else", "fleet"))
                .build());
      } else {
        changing.sendRawSotw(
            TypeUrl.CLUSTER,
            DiscoveryRequest.newBuilder()
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .setNode(node("somebody-else", "fleet"))
                .build());
      }
      io.grpc.Status status = changing.awaitEnd(TypeUrl.CLUSTER, WAIT);
      assertThat(status.getCode()).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(status.getDescription()).contains("'n1'").contains("'somebody-else'");
    }
  }

  // "RPC Services and Methods for Each Variant": a per-type service serves its own type alone; ADS
  // carries any type URL
  @ParameterizedTest
  @EnumSource(Variant.class)
  void anotherTypeUrlEndsAPerTypeStreamAndIsCarriedByAds(Variant variant) {
    publish("1", 1000, "a");
    String opaque = "type.googleapis.com/example.v1.Widget";
    try (VariantClient client = client(variant, "n1")) {
      client.subscribe(TypeUrl.CLUSTER);
      client.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> held.size() == 1);

      if (variant.delta()) {
        client.sendRawDelta(
            TypeUrl.CLUSTER, DeltaDiscoveryRequest.newBuilder().setTypeUrl(opaque).build());
      } else {
        client.sendRawSotw(
            TypeUrl.CLUSTER, DiscoveryRequest.newBuilder().setTypeUrl(opaque).build());
      }

      if (variant.ads()) {
        publish("2", 1000, "a", "b");
        client.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> held.size() == 2);
      } else {
        io.grpc.Status status = client.awaitEnd(TypeUrl.CLUSTER, WAIT);
        assertThat(status.getCode()).isEqualTo(Code.INVALID_ARGUMENT);
        assertThat(status.getDescription()).contains(opaque);
      }
    }
  }
}
