package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * "TTL": resources with a TTL, and heartbeats, pass from the upstream to the clients that announce
 * they understand them, wrapped in {@code Resource} for SotW ("SotW TTL"); other clients get the
 * bare resources and never hear of a heartbeat.
 */
class TtlTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration QUIET = Duration.ofMillis(600);
  private static final String RESOURCE_URL =
      "type.googleapis.com/envoy.service.discovery.v3.Resource";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ScriptedControlPlane upstream;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    upstream = fixture.scriptedControlPlane();
    proxy = fixture.proxy(against(upstream.target()));
  }

  private static Node node(String id, boolean knowsTtl) {
    Node.Builder node = Node.newBuilder().setId(id).setCluster("fleet");
    if (knowsTtl) {
      node.addClientFeatures("xds.config.supports-resource-ttl")
          .addClientFeatures("xds.config.supports-resource-in-sotw");
    }
    return node.build();
  }

  private static final Cluster LEASED =
      Cluster.newBuilder().setName("leased").setType(Cluster.DiscoveryType.EDS).build();
  private static final Cluster PLAIN =
      Cluster.newBuilder().setName("plain").setType(Cluster.DiscoveryType.EDS).build();

  /** The upstream's answer: one cluster with a 30 s TTL, one without. */
  private void answerWithALeasedAndAPlainCluster() throws Exception {
    DiscoveryRequest request = upstream.nextRequest(WAIT);
    assertThat(request.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
    upstream.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo("1")
            .setNonce("u1")
            .addResources(
                Any.pack(
                    Resource.newBuilder()
                        .setName("leased")
                        .setVersion("v1")
                        .setTtl(Durations.fromSeconds(30))
                        .setResource(Any.pack(LEASED))
                        .build()))
            .addResources(Any.pack(PLAIN))
            .build());
    upstream.nextRequest(WAIT);
  }

  private void heartbeat() {
    heartbeat(Durations.fromSeconds(30));
  }

  /** A heartbeat from the upstream: "leased" is unchanged and leased for {@code ttl} from now. */
  private void heartbeat(com.google.protobuf.Duration ttl) {
    upstream.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo("1")
            .setNonce("beat")
            .addResources(
                Any.pack(
                    Resource.newBuilder().setName("leased").setVersion("v1").setTtl(ttl).build()))
            .build());
  }

  private static DiscoveryRequest ack(DiscoveryResponse response) {
    return DiscoveryRequest.newBuilder()
        .setTypeUrl(response.getTypeUrl())
        .setVersionInfo(response.getVersionInfo())
        .setResponseNonce(response.getNonce())
        .build();
  }

  @Test
  void sotwClientsThatKnowTtlsGetWrappedResourcesAndHeartbeatsAndOthersBareResourcesOnly()
      throws Exception {
    try (var knowing = XdsTestClient.sotwAds(proxy.xdsPort());
        var unknowing = XdsTestClient.sotwAds(proxy.xdsPort())) {
      knowing.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("knows", true))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      answerWithALeasedAndAPlainCluster();
      unknowing.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("ignores", false))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());

      DiscoveryResponse wrapped = knowing.next(WAIT);
      DiscoveryResponse bare = unknowing.next(WAIT);

      Any leased =
          wrapped.getResourcesList().stream()
              .filter(any -> any.getTypeUrl().equals(RESOURCE_URL))
              .findFirst()
              .orElseThrow(() -> new AssertionError("no Resource-wrapped cluster in " + wrapped));
      Resource lease = leased.unpack(Resource.class);
      assertThat(lease.getName()).isEqualTo("leased");
      assertThat(lease.getTtl()).isEqualTo(Durations.fromSeconds(30));
      assertThat(lease.getResource().unpack(Cluster.class)).isEqualTo(LEASED);
      assertThat(wrapped.getResourcesList()).contains(Any.pack(PLAIN));
      assertThat(bare.getResourcesList())
          .containsExactlyInAnyOrder(Any.pack(LEASED), Any.pack(PLAIN));
      knowing.send(ack(wrapped));
      unknowing.send(ack(bare));

      heartbeat();

      DiscoveryResponse beat = knowing.next(WAIT);
      assertThat(beat.getResourcesList()).hasSize(1);
      Resource heartbeat = beat.getResources(0).unpack(Resource.class);
      assertThat(heartbeat.getName()).isEqualTo("leased");
      assertThat(heartbeat.hasResource()).as("a heartbeat has no resource").isFalse();
      assertThat(heartbeat.getTtl()).isEqualTo(Durations.fromSeconds(30));
      unknowing.expectNoResponse(QUIET);
    }
  }

  @Test
  void deltaClientsThatKnowTtlsGetTtlsAndHeartbeatsAndOthersNeither() throws Exception {
    try (var knowing = XdsTestClient.deltaAds(proxy.xdsPort());
        var unknowing = XdsTestClient.deltaAds(proxy.xdsPort())) {
      knowing.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("knows", true))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      answerWithALeasedAndAPlainCluster();
      unknowing.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("ignores", false))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());

      DeltaDiscoveryResponse withTtl = knowing.next(WAIT);
      DeltaDiscoveryResponse withoutTtl = unknowing.next(WAIT);

      assertThat(withTtl.getResourcesList())
          .filteredOn(r -> r.getName().equals("leased"))
          .singleElement()
          .satisfies(r -> assertThat(r.getTtl()).isEqualTo(Durations.fromSeconds(30)));
      assertThat(withoutTtl.getResourcesList())
          .filteredOn(r -> r.getName().equals("leased"))
          .singleElement()
          .satisfies(r -> assertThat(r.hasTtl()).isFalse());

      heartbeat();

      DeltaDiscoveryResponse beat = knowing.next(WAIT);
      assertThat(beat.getResourcesList())
          .singleElement()
          .satisfies(
              r -> {
                assertThat(r.getName()).isEqualTo("leased");
                assertThat(r.getVersion()).isEqualTo("v1");
                assertThat(r.hasResource()).isFalse();
              });
      unknowing.expectNoResponse(QUIET);
    }
  }

  /** The upstream's answer: a cluster leased for {@code ttl}, and one without a TTL. */
  private void answerWithALease(com.google.protobuf.Duration ttl) throws Exception {
    upstream.nextRequest(WAIT);
    upstream.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo("1")
            .setNonce("u1")
            .addResources(
                Any.pack(
                    Resource.newBuilder()
                        .setName("leased")
                        .setVersion("v1")
                        .setTtl(ttl)
                        .setResource(Any.pack(LEASED))
                        .build()))
            .addResources(Any.pack(PLAIN))
            .build());
  }

  @Test
  void aTtlThatLapsesWithoutAHeartbeatRemovesTheResourceFromEveryClient() throws Exception {
    try (var delta = XdsTestClient.deltaAds(proxy.xdsPort());
        var sotw = XdsTestClient.sotwAds(proxy.xdsPort())) {
      delta.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("delta", true))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      answerWithALease(Durations.fromMillis(500));
      sotw.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("sotw", false))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      assertThat(delta.next(WAIT).getResourcesCount()).isEqualTo(2);
      DiscoveryResponse both = sotw.next(WAIT);
      assertThat(both.getResourcesCount()).isEqualTo(2);
      sotw.send(ack(both));

      DeltaDiscoveryResponse expiry = delta.next(WAIT);
      DiscoveryResponse rest = sotw.next(WAIT);

      assertThat(expiry.getRemovedResourcesList()).containsExactly("leased");
      assertThat(rest.getResourcesList()).containsExactly(Any.pack(PLAIN));
    }
  }

  @Test
  void heartbeatsKeepALeasedResourceAndItLapsesWhenTheyStop() throws Exception {
    java.util.concurrent.ScheduledExecutorService beats =
        java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
    try (var client = XdsTestClient.deltaAds(proxy.xdsPort())) {
      client.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("ignores", false))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      answerWithALease(Durations.fromSeconds(2));
      assertThat(client.next(WAIT).getResourcesCount()).isEqualTo(2);

      var beating =
          beats.scheduleAtFixedRate(
              () -> heartbeat(Durations.fromSeconds(2)),
              200,
              200,
              java.util.concurrent.TimeUnit.MILLISECONDS);
      client.expectNoResponse(Duration.ofSeconds(4));
      beating.cancel(false);

      assertThat(client.next(WAIT).getRemovedResourcesList()).containsExactly("leased");
    } finally {
      beats.shutdownNow();
    }
  }
}
