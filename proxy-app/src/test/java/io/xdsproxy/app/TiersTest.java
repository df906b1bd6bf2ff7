package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.app.testing.Backend;
import io.xdsproxy.app.testing.ControlPlaneCell;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsClientChannel;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.grpc.AdsUpstream.Protocol;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 8: proxies in tiers, a proxy whose upstream is another proxy (global → regional → zonal),
 * State of the World or incremental between the tiers. What a client at the bottom is served is
 * what the control plane at the top serves its node group; the top sees node groups (a real
 * client's node, one stream per group), not proxies; do_not_cache and TTL mean at the bottom what
 * they mean at the top.
 */
class TiersTest {

  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final Duration QUIET = Duration.ofMillis(800);
  private static final String KNOWS_TTL = "xds.config.supports-resource-ttl";
  private static final String KNOWS_RESOURCE_IN_SOTW = "xds.config.supports-resource-in-sotw";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  /** A proxy of the lower tier: its upstream is {@code upper}, spoken to in {@code between}. */
  private XdsProxy lowerTier(XdsProxy upper, Protocol between) throws Exception {
    return fixture.proxy(against("127.0.0.1:" + upper.xdsPort()).withUpstreamProtocol(between));
  }

  /**
   * Over every control plane at the top, the top tier speaking to it in the cell's variant, the
   * tiers below speaking the same among themselves.
   */
  @ParameterizedTest(name = "{0}, and between the tiers")
  @MethodSource(ControlPlaneCell.EVERY)
  void grpcXdsClientsBelowThreeTiersAreServedAndTheTopSeesOneStreamPerNodeGroupWithAClientsNode(
      ControlPlaneCell cell) throws Exception {
    UpstreamControlPlane top = fixture.controlPlane(cell);
    XdsProxy global = fixture.proxy(against(cell, top));
    XdsProxy regional = lowerTier(global, cell.upstream());
    XdsProxy zonal = lowerTier(regional, cell.upstream());
    Backend first = fixture.add(new Backend("first"));
    Backend second = fixture.add(new Backend("second"));
    Backend third = fixture.add(new Backend("third"));
    top.setSnapshot("east", Resources.greeterAt(first.port(), "1"));
    top.setSnapshot("west", Resources.greeterAt(second.port(), "1"));
    // Clients at the bottom tier and one tier up, of two node groups.
    XdsClientChannel east1 =
        fixture.add(new XdsClientChannel(zonal.xdsPort(), "east-1", "east", "greeter"));
    XdsClientChannel east2 =
        fixture.add(new XdsClientChannel(regional.xdsPort(), "east-2", "east", "greeter"));
    XdsClientChannel west1 =
        fixture.add(new XdsClientChannel(zonal.xdsPort(), "west-1", "west", "greeter"));

    await().atMost(WAIT).ignoreExceptions().until(east1::whoAmI, "first"::equals);
    await().atMost(WAIT).ignoreExceptions().until(east2::whoAmI, "first"::equals);
    await().atMost(WAIT).ignoreExceptions().until(west1::whoAmI, "second"::equals);

    top.setSnapshot("east", Resources.greeterAt(third.port(), "2"));

    await().atMost(WAIT).ignoreExceptions().until(east1::whoAmI, "third"::equals);
    await().atMost(WAIT).ignoreExceptions().until(east2::whoAmI, "third"::equals);
    assertThat(west1.whoAmI()).isEqualTo("second");
    assertThat(top.streamGroups())
        .as("the top control plane's streams, by node group")
        .containsExactlyInAnyOrder("east", "west");
    List<String> nodeIds =
        Stream.concat(
                top.requests().stream()
                    .filter(DiscoveryRequest::hasNode)
                    .map(r -> r.getNode().getId()),
                top.deltaRequests().stream()
                    .filter(DeltaDiscoveryRequest::hasNode)
                    .map(r -> r.getNode().getId()))
            .distinct()
            .toList();
    assertThat(nodeIds)
        .as("the nodes the top sees are the clients', carried through the tiers")
        .isSubsetOf("east-1", "east-2", "west-1")
        .contains("west-1");
    assertThat(zonal.groups().groups())
        .extracting(group -> group.key().value())
        .containsExactlyInAnyOrder("east", "west");
    assertThat(regional.groups().groups())
        .extracting(group -> group.key().value())
        .containsExactlyInAnyOrder("east", "west");
  }

  /**
   * Two tiers over a control plane the test scripts: a client of the lower one, its node knowing
   * TTLs.
   */
  private record Scripted(ScriptedControlPlane top, XdsProxy global, XdsProxy regional) {}

  private Scripted scripted(Protocol between) throws Exception {
    ScriptedControlPlane top = fixture.scriptedControlPlane();
    XdsProxy global = fixture.proxy(against(top.target()));
    return new Scripted(top, global, lowerTier(global, between));
  }

  /**
   * A Delta client that knows TTLs. Not SotW's Resource wrapper: that the proxies ask for it
   * between them, whatever their first client asked for, is what carries TTLs and do_not_cache over
   * SotW.
   */
  private XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> knowingClient(
      XdsProxy proxy, String id) {
    var client = fixture.add(XdsTestClient.deltaAds(proxy.xdsPort()));
    Node node = node(id, "fleet").toBuilder().addClientFeatures(KNOWS_TTL).build();
    client.send(
        DeltaDiscoveryRequest.newBuilder().setNode(node).setTypeUrl(TypeUrl.CLUSTER.url()).build());
    return client;
  }

  private static Cluster cluster(String name) {
    return Cluster.newBuilder().setName(name).setType(Cluster.DiscoveryType.EDS).build();
  }

  private static Any wrapped(String name, String version, Resource.Builder wrapper) {
    return Any.pack(
        wrapper.setName(name).setVersion(version).setResource(Any.pack(cluster(name))).build());
  }

  /**
   * The top's answer to the request it has: a plain cluster, and one it says not to cache at {@code
   * secretVersion}.
   */
  private static void answerWithASecret(
      ScriptedControlPlane top, String nonce, String secretVersion) {
    top.send(
        DiscoveryResponse.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setVersionInfo(nonce)
            .setNonce(nonce)
            .addResources(Any.pack(cluster("plain")))
            .addResources(
                wrapped(
                    "secret",
                    secretVersion,
                    Resource.newBuilder()
                        .setCacheControl(Resource.CacheControl.newBuilder().setDoNotCache(true))))
            .build());
  }

  private static String versionOf(DeltaDiscoveryResponse response, String name) {
    return response.getResourcesList().stream()
        .filter(r -> r.getName().equals(name))
        .map(Resource::getVersion)
        .findFirst()
        .orElse(null);
  }

  @ParameterizedTest(name = "{0} between the tiers")
  @EnumSource(Protocol.class)
  void doNotCacheHoldsAcrossTiersALaterClientBelowMakesTheTopAskedAgain(Protocol between)
      throws Exception {
    Scripted tiers = scripted(between);
    var early = knowingClient(tiers.regional(), "early");
    DiscoveryRequest first = tiers.top().nextRequest(WAIT);
    assertThat(first.getNode().getId()).as("the node the top sees").isEqualTo("early");
    assertThat(first.getNode().getClientFeaturesList())
        .as("what the top is told the tier below understands")
        .contains(KNOWS_TTL, KNOWS_RESOURCE_IN_SOTW);
    answerWithASecret(tiers.top(), "1", "s1");

    DeltaDiscoveryResponse delivered = early.next(WAIT);
    assertThat(delivered.getResourcesList())
        .extracting(Resource::getName)
        .containsExactlyInAnyOrder("plain", "secret");
    assertThat(delivered.getResourcesList())
        .filteredOn(r -> r.getName().equals("secret"))
        .singleElement()
        .satisfies(
            r ->
                assertThat(r.getCacheControl().getDoNotCache())
                    .as("do_not_cache, two tiers down")
                    .isTrue());
    assertThat(tiers.top().nextRequest(WAIT).getResponseNonce())
        .as("the ACK of the top's response")
        .isEqualTo("1");

    var late = knowingClient(tiers.regional(), "late");
    DeltaDiscoveryResponse fromStores = late.next(WAIT);
    assertThat(fromStores.getResourcesList())
        .extracting(Resource::getName)
        .as("neither tier serves the secret from its store to a later client")
        .containsExactly("plain");
    DiscoveryRequest askedAgain = tiers.top().nextRequest(WAIT);
    assertThat(askedAgain.getVersionInfo())
        .as("the top is asked again, with a version that gets an answer")
        .isEmpty();
    answerWithASecret(tiers.top(), "2", "s2");

    assertThat(versionOf(late.next(WAIT), "secret"))
        .as(
            "the top's next copy reaches the later client\n%s\n%s",
            late.transcript(), early.transcript())
        .isEqualTo("s2");
  }

  @ParameterizedTest(name = "{0} between the tiers")
  @EnumSource(Protocol.class)
  void ttlsAndHeartbeatsReachTheBottomAndALapseRemovesTheResourceThere(Protocol between)
      throws Exception {
    Scripted tiers = scripted(between);
    var client = knowingClient(tiers.regional(), "client");
    tiers.top().nextRequest(WAIT);
    tiers
        .top()
        .send(
            DiscoveryResponse.newBuilder()
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .setVersionInfo("1")
                .setNonce("1")
                .addResources(Any.pack(cluster("plain")))
                .addResources(
                    wrapped("leased", "v1", Resource.newBuilder().setTtl(Durations.fromSeconds(3))))
                .build());

    DeltaDiscoveryResponse delivered = client.next(WAIT);
    assertThat(delivered.getResourcesList())
        .filteredOn(r -> r.getName().equals("leased"))
        .singleElement()
        .satisfies(
            r ->
                assertThat(r.getTtl())
                    .as("the TTL, two tiers down")
                    .isEqualTo(Durations.fromSeconds(3)));
    client.send(
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setResponseNonce(delivered.getNonce())
            .build());

    tiers
        .top()
        .send(
            DiscoveryResponse.newBuilder()
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .setVersionInfo("1")
                .setNonce("beat")
                .addResources(
                    Any.pack(
                        Resource.newBuilder()
                            .setName("leased")
                            .setVersion("v1")
                            .setTtl(Durations.fromSeconds(3))
                            .build()))
                .build());
    DeltaDiscoveryResponse beat = client.next(WAIT);
    assertThat(beat.getResourcesList())
        .as("the heartbeat, two tiers down")
        .singleElement()
        .satisfies(
            r -> {
              assertThat(r.getName()).isEqualTo("leased");
              assertThat(r.hasResource()).isFalse();
            });
    client.send(
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setResponseNonce(beat.getNonce())
            .build());

    // No more heartbeats: the lease lapses at the top tier's store, and so below it.
    DeltaDiscoveryResponse lapsed = client.next(WAIT);
    assertThat(lapsed.getRemovedResourcesList()).containsExactly("leased");
    client.expectNoResponse(QUIET);
  }
}
