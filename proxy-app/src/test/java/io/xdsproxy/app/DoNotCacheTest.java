package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Invariant 3: a resource the upstream marks {@code cache_control.do_not_cache} reaches the streams
 * subscribed when it comes, and is not served from the proxy's store to a later one: a later
 * subscriber makes the proxy ask the upstream again, and gets the upstream's next copy.
 */
class DoNotCacheTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration QUIET = Duration.ofMillis(600);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ScriptedControlPlane upstream;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    upstream = fixture.scriptedControlPlane();
    proxy = fixture.proxy(against(upstream.target()));
  }

  private static Cluster cluster(String name) {
    return Cluster.newBuilder().setName(name).setType(Cluster.DiscoveryType.EDS).build();
  }

  /** The upstream's state: a plain cluster, and a secret one it says not to cache. */
  private void answer(String nonce) {
    upstream.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo("1")
            .setNonce(nonce)
            .addResources(Any.pack(cluster("plain")))
            .addResources(
                Any.pack(
                    Resource.newBuilder()
                        .setName("secret")
                        .setVersion("s1")
                        .setResource(Any.pack(cluster("secret")))
                        .setCacheControl(Resource.CacheControl.newBuilder().setDoNotCache(true))
                        .build()))
            .build());
  }

  private static List<String> names(DiscoveryResponse response) {
    return response.getResourcesList().stream()
        .map(any -> ResourceDecoder.nameOf(any.getValue()))
        .sorted()
        .toList();
  }

  private static DiscoveryRequest ack(DiscoveryResponse response) {
    return DiscoveryRequest.newBuilder()
        .setTypeUrl(response.getTypeUrl())
        .setVersionInfo(response.getVersionInfo())
        .setResponseNonce(response.getNonce())
        .build();
  }

  @Test
  void subscribersAtDeliveryGetItAndLaterOnesGetTheUpstreamsNextCopyNotTheStoresCopy()
      throws Exception {
    try (var early = XdsTestClient.sotwAds(proxy.xdsPort());
        var lateSotw = XdsTestClient.sotwAds(proxy.xdsPort());
        var lateDelta = XdsTestClient.deltaAds(proxy.xdsPort())) {
      early.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("early", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      upstream.nextRequest(WAIT);
      answer("u1");
      DiscoveryResponse delivered = early.next(WAIT);
      assertThat(names(delivered)).containsExactly("plain", "secret");
      early.send(ack(delivered));
      assertThat(upstream.nextRequest(WAIT).getVersionInfo()).as("the proxy's ACK").isEqualTo("1");

      lateSotw.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("late-sotw", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      DiscoveryResponse fromStore = lateSotw.next(WAIT);
      assertThat(names(fromStore))
          .as("the store serves what it may keep, not the secret")
          .containsExactly("plain");
      DiscoveryRequest askAgain = upstream.nextRequest(WAIT);
      assertThat(askAgain.getVersionInfo())
          .as("asked again, with a version that gets an answer")
          .isEmpty();
      lateSotw.send(ack(fromStore));
      lateDelta.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("late-delta", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      DeltaDiscoveryResponse deltaFromStore = lateDelta.next(WAIT);
      assertThat(deltaFromStore.getResourcesList())
          .extracting(Resource::getName)
          .containsExactly("plain");

      answer("u2");

      assertThat(names(lateSotw.next(WAIT))).containsExactly("plain", "secret");
      DeltaDiscoveryResponse fresh = lateDelta.next(WAIT);
      assertThat(fresh.getResourcesList()).extracting(Resource::getName).containsExactly("secret");
      assertThat(fresh.getResources(0).getCacheControl().getDoNotCache()).isTrue();
      early.expectNoResponse(QUIET);
    }
  }
}
