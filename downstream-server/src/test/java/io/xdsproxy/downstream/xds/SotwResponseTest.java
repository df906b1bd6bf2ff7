package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.Snapshots;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.io.InputStream;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Serialize once, write many: what a SotW stream writes, and what its streams share. */
class SotwResponseTest {

  private static XdsResource cluster(int i) {
    return XdsResource.of("c" + i, Any.pack(Cluster.newBuilder().setName("c" + i).setType(Cluster.DiscoveryType.EDS).build()));
  }

  private final TypeSnapshot clusters =
      Snapshots.complete(TypeUrl.CLUSTER, IntStream.range(0, 50).mapToObj(SotwResponseTest::cluster).toList());

  private static SotwTypeState wildcardStream(TypeSnapshot snapshot, boolean knowsTtl) {
    SotwTypeState state = new SotwTypeState(TypeUrl.CLUSTER, snapshot, knowsTtl);
    state.subscribe(List.of());
    state.update(snapshot);
    return state;
  }

  @Test
  void whatIsWrittenIsTheDiscoveryResponseItStandsFor() throws Exception {
    Any leased = Any.pack(Resource.newBuilder().setName("leased").setTtl(Durations.fromSeconds(5))
        .setResource(Any.pack(Cluster.newBuilder().setName("leased").build())).build());
    List<Any> resources = List.of(cluster(1).body(), leased);
    SotwResponse response = new SotwResponse("v1", TypeUrl.CLUSTER.url(), "7", SotwResponse.encode(resources));

    DiscoveryResponse expected = DiscoveryResponse.newBuilder().setVersionInfo("v1").setTypeUrl(TypeUrl.CLUSTER.url())
        .setNonce("7").addAllResources(resources).build();
    try (InputStream written = SotwResponse.MARSHALLER.stream(response)) {
      assertThat(written.available()).isEqualTo(expected.getSerializedSize());
      assertThat(DiscoveryResponse.parseFrom(written)).isEqualTo(expected);
    }
    assertThat(response.size()).isEqualTo(expected.getSerializedSize());
    SotwResponse empty = new SotwResponse("", TypeUrl.CLUSTER.url(), "1", SotwResponse.encode(List.of()));
    assertThat(empty.toMessage()).isEqualTo(DiscoveryResponse.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url())
        .setNonce("1").build());
  }

  @Test
  void everyWildcardStreamOfAGroupSharesOneEncodingOfTheWholeState() {
    SotwTypeState first = wildcardStream(clusters, false);
    SotwTypeState second = wildcardStream(clusters, false);
    SotwTypeState knowsTtl = wildcardStream(clusters, true);

    SotwTypeState.Outgoing one = first.nextResponse(false).orElseThrow();
    SotwTypeState.Outgoing other = second.nextResponse(false).orElseThrow();

    assertThat(one.whole()).isTrue();
    assertThat(one.version()).isEqualTo(clusters.version());
    assertThat(first.encoded(one)).as("encoded once, shared").isSameAs(second.encoded(other));
    assertThat(knowsTtl.encoded(knowsTtl.nextResponse(false).orElseThrow()))
        .as("a client that takes TTLs may be sent other bytes").isNotSameAs(first.encoded(one));
    SotwResponse written = new SotwResponse(one.version(), TypeUrl.CLUSTER.url(), "1", first.encoded(one));
    assertThat(written.toMessage().getResourcesList()).containsExactlyElementsOf(first.encode(one));
  }

  @Test
  void aStreamThatNamesResourcesGetsItsOwnEncoding() {
    SotwTypeState named = new SotwTypeState(TypeUrl.CLUSTER, clusters, false);
    named.subscribe(List.of("c1", "c2"));
    named.update(clusters);

    Optional<SotwTypeState.Outgoing> outgoing = named.nextResponse(false);

    assertThat(outgoing).hasValueSatisfying(o -> assertThat(o.whole()).isFalse());
    SotwResponse written = new SotwResponse(outgoing.get().version(), TypeUrl.CLUSTER.url(), "1",
        named.encoded(outgoing.get()));
    assertThat(written.toMessage().getResourcesList()).containsExactlyInAnyOrder(cluster(1).body(), cluster(2).body());
  }
}
