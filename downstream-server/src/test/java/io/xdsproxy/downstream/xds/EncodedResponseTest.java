package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.Snapshots;
import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.core.testing.Assignments;
import java.io.InputStream;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Serialize once, write many: what SotW and Delta streams write, and what streams share. */
class EncodedResponseTest {

  private static XdsResource cluster(int i) {
    return XdsResource.of(
        "c" + i,
        Any.pack(Cluster.newBuilder().setName("c" + i).setType(Cluster.DiscoveryType.EDS).build()));
  }

  private final TypeSnapshot clusters =
      Snapshots.complete(
          TypeUrl.CLUSTER, IntStream.range(0, 50).mapToObj(EncodedResponseTest::cluster).toList());

  private static SotwTypeState wildcardStream(TypeSnapshot snapshot, boolean knowsTtl) {
    SotwTypeState state = new SotwTypeState(TypeUrl.CLUSTER, snapshot, knowsTtl);
    state.subscribe(List.of());
    state.update(snapshot);
    return state;
  }

  @Test
  void whatIsWrittenIsTheDiscoveryResponseItStandsFor() throws Exception {
    Any leased =
        Any.pack(
            Resource.newBuilder()
                .setName("leased")
                .setTtl(Durations.fromSeconds(5))
                .setResource(Any.pack(Cluster.newBuilder().setName("leased").build()))
                .build());
    List<Any> resources = List.of(cluster(1).body(), leased);
    EncodedResponse response =
        new EncodedResponse("v1", TypeUrl.CLUSTER.url(), "7", EncodedResponse.sotwBody(resources));

    DiscoveryResponse expected =
        DiscoveryResponse.newBuilder()
            .setVersionInfo("v1")
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setNonce("7")
            .addAllResources(resources)
            .build();
    try (InputStream written = EncodedResponse.SOTW.stream(response)) {
      assertThat(written.available()).isEqualTo(expected.getSerializedSize());
      assertThat(DiscoveryResponse.parseFrom(written)).isEqualTo(expected);
    }
    assertThat(response.size()).isEqualTo(expected.getSerializedSize());
    EncodedResponse empty =
        new EncodedResponse("", TypeUrl.CLUSTER.url(), "1", EncodedResponse.sotwBody(List.of()));
    assertThat(empty.toSotw())
        .isEqualTo(
            DiscoveryResponse.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url()).setNonce("1").build());
  }

  /**
   * gRPC drains a stream that can be drained straight into its frame, and copies any other through
   * a buffer it allocates per message; read in pieces or drained from anywhere, the bytes are the
   * message's.
   */
  @Test
  void whatIsWrittenDrainsIntoGrpcsFrameOrReadsInPiecesAsTheSameBytes() throws Exception {
    EncodedResponse response =
        new EncodedResponse(
            "v1",
            TypeUrl.CLUSTER.url(),
            "7",
            EncodedResponse.sotwBody(List.of(cluster(1).body(), cluster(2).body())));
    byte[] expected;
    try (InputStream written = EncodedResponse.SOTW.stream(response)) {
      expected = written.readAllBytes(); // its own fields first, then the shared body
    }
    assertThat(DiscoveryResponse.parseFrom(expected)).isEqualTo(response.toSotw());

    for (int first : new int[] {0, 1, 5, 60, expected.length - 1, expected.length}) {
      try (InputStream written = EncodedResponse.SOTW.stream(response)) {
        assertThat(written).isInstanceOf(io.grpc.Drainable.class);
        byte[] start = written.readNBytes(first);
        java.io.ByteArrayOutputStream rest = new java.io.ByteArrayOutputStream();

        int drained = ((io.grpc.Drainable) written).drainTo(rest);

        assertThat(drained).isEqualTo(expected.length - first);
        assertThat(written.available()).isZero();
        assertThat(written.read()).isEqualTo(-1);
        byte[] all = java.util.Arrays.copyOf(start, expected.length);
        System.arraycopy(rest.toByteArray(), 0, all, first, drained);
        assertThat(all).as("%d bytes read, then drained", first).isEqualTo(expected);
      }
    }
    try (InputStream written = EncodedResponse.SOTW.stream(response)) {
      java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
      bytes.write(written.read());
      byte[] piece = new byte[7];
      for (int n = written.read(piece, 0, 7); n > 0; n = written.read(piece, 0, 7)) {
        bytes.write(piece, 0, n);
      }
      assertThat(bytes.toByteArray()).isEqualTo(expected);
    }
  }

  @Test
  void everyWildcardStreamOfAGroupSharesOneEncodingOfTheWholeState() {
    SotwTypeState first = wildcardStream(clusters, false);
    SotwTypeState second = wildcardStream(clusters, false);
    SotwTypeState knowsTtl = wildcardStream(clusters, true);

    SotwOutgoing one = first.nextResponse(false).orElseThrow();
    SotwOutgoing other = second.nextResponse(false).orElseThrow();

    assertThat(one.whole()).isTrue();
    assertThat(one.version()).isEqualTo(clusters.version());
    assertThat(first.encoded(one)).as("encoded once, shared").isSameAs(second.encoded(other));
    assertThat(knowsTtl.encoded(knowsTtl.nextResponse(false).orElseThrow()))
        .as("a client that takes TTLs may be sent other bytes")
        .isNotSameAs(first.encoded(one));
    EncodedResponse written =
        new EncodedResponse(one.version(), TypeUrl.CLUSTER.url(), "1", first.encoded(one));
    assertThat(written.toSotw().getResourcesList()).containsExactlyElementsOf(first.encode(one));
  }

  @Test
  void aStreamThatNamesResourcesGetsItsOwnEncoding() {
    SotwTypeState named = new SotwTypeState(TypeUrl.CLUSTER, clusters, false);
    named.subscribe(List.of("c1", "c2"));
    named.update(clusters);

    Optional<SotwOutgoing> outgoing = named.nextResponse(false);

    assertThat(outgoing).hasValueSatisfying(o -> assertThat(o.whole()).isFalse());
    EncodedResponse written =
        new EncodedResponse(
            outgoing.get().version(), TypeUrl.CLUSTER.url(), "1", named.encoded(outgoing.get()));
    assertThat(written.toSotw().getResourcesList())
        .containsExactlyInAnyOrder(cluster(1).body(), cluster(2).body());
  }

  private static XdsResource endpoints(String cluster, int port) {
    return XdsResource.of(cluster, Any.pack(Assignments.oneEndpoint(cluster, port)));
  }

  private final TypeSnapshot before =
      Snapshots.complete(
          TypeUrl.ENDPOINT, List.of(endpoints("a", 1), endpoints("b", 1), endpoints("c", 1)));
  private final TypeSnapshot after =
      Snapshots.next(
          before,
          ResourceUpdate.partial(TypeUrl.ENDPOINT, List.of(endpoints("a", 2)), Set.of(), false));

  /** A SotW stream that subscribed to {@code names} and was sent {@link #before}. */
  private SotwTypeState sotwInSync(List<String> names, boolean knowsTtl) {
    SotwTypeState state = new SotwTypeState(TypeUrl.ENDPOINT, before, knowsTtl);
    state.subscribe(names);
    state.sent(state.nextResponse(false).orElseThrow(), 1);
    return state;
  }

  /** A Delta stream that subscribed to {@code names} and was sent {@link #before}. */
  private DeltaTypeState deltaInSync(List<String> names) {
    DeltaTypeState state = new DeltaTypeState(TypeUrl.ENDPOINT, before, false, Clock.systemUTC());
    state.subscribe(names, List.of(), Map.of());
    state.sent(state.nextResponse(false).orElseThrow(), 1);
    return state;
  }

  @Test
  void sotwStreamsThatHeldTheSameStateShareOneResponseToAChangeAndItsEncoding() {
    SotwTypeState first = sotwInSync(List.of("a", "b"), false);
    SotwTypeState second = sotwInSync(List.of("a", "b"), false);
    SotwTypeState otherNames = sotwInSync(List.of("a", "c"), false);
    List.of(first, second, otherNames).forEach(state -> state.update(after));

    SotwOutgoing one = first.nextResponse(false).orElseThrow();

    assertThat(one.included()).containsExactly(after.get("a"));
    assertThat(second.nextResponse(false)).as("built once").containsSame(one);
    assertThat(second.encoded(one)).as("encoded once").isSameAs(first.encoded(one));
    SotwOutgoing own = otherNames.nextResponse(false).orElseThrow();
    assertThat(own).as("another subscription, another position").isNotSameAs(one);
    assertThat(own.included()).containsExactly(after.get("a"));
    EncodedResponse written =
        new EncodedResponse(one.version(), TypeUrl.ENDPOINT.url(), "2", first.encoded(one));
    assertThat(written.toSotw().getResourcesList()).containsExactly(after.get("a").body());
  }

  @Test
  void aSotwStreamThatJustSubscribedToMoreGetsAResponseOfItsOwn() {
    SotwTypeState inSync = sotwInSync(List.of("a", "b"), false);
    SotwTypeState widened = sotwInSync(List.of("a"), false);
    widened.subscribe(List.of("a", "b"));
    inSync.update(after);
    widened.update(after);

    SotwOutgoing shared = inSync.nextResponse(false).orElseThrow();
    SotwOutgoing own = widened.nextResponse(false).orElseThrow();

    assertThat(own).isNotSameAs(shared);
    assertThat(own.included())
        .as("b is newly subscribed: sent although unchanged")
        .containsExactlyInAnyOrder(after.get("a"), after.get("b"));
    assertThat(shared.included()).containsExactly(after.get("a"));
  }

  @Test
  void deltaStreamsThatHeldTheSameStateShareOneResponseToAChangeAndItsEncoding() {
    DeltaTypeState first = deltaInSync(List.of("a", "b"));
    DeltaTypeState second = deltaInSync(List.of("a", "b"));
    DeltaTypeState reconnected =
        new DeltaTypeState(TypeUrl.ENDPOINT, before, false, Clock.systemUTC());
    reconnected.subscribe(List.of("a", "b"), List.of(), Map.of("a", before.get("a").version()));
    List.of(first, second, reconnected).forEach(state -> state.update(after));

    DeltaTypeState.Outgoing one = first.nextResponse(false).orElseThrow();

    assertThat(second.nextResponse(false)).as("built once").containsSame(one);
    assertThat(second.encoded(one)).as("encoded once").isSameAs(first.encoded(one));
    assertThat(reconnected.nextResponse(false))
        .as("what it claimed on reconnecting is its own")
        .hasValueSatisfying(own -> assertThat(own).isNotSameAs(one));
    EncodedResponse written =
        new EncodedResponse(after.version(), TypeUrl.ENDPOINT.url(), "2", first.encoded(one));
    DeltaDiscoveryResponse message = written.toDelta();
    assertThat(message.getResourcesList()).containsExactly(after.get("a").toResource(false));
    assertThat(message.getSystemVersionInfo()).isEqualTo(after.version());
  }

  @Test
  void groupsThatHoldTheSameResourcesShareOneEncodingOfThem() {
    List<XdsResource> shared =
        IntStream.range(0, 50).mapToObj(EncodedResponseTest::cluster).toList();
    TypeSnapshot oneGroup = Snapshots.complete(TypeUrl.CLUSTER, shared);
    TypeSnapshot otherGroup = Snapshots.complete(TypeUrl.CLUSTER, shared);
    TypeSnapshot equalCopies =
        Snapshots.complete(
            TypeUrl.CLUSTER,
            IntStream.range(0, 50).mapToObj(EncodedResponseTest::cluster).toList());

    SotwTypeState inOne = wildcardStream(oneGroup, false);
    SotwTypeState inOther = wildcardStream(otherGroup, false);
    SotwTypeState withCopies = wildcardStream(equalCopies, false);
    byte[] one = inOne.encoded(inOne.nextResponse(false).orElseThrow());
    byte[] other = inOther.encoded(inOther.nextResponse(false).orElseThrow());
    byte[] copies = withCopies.encoded(withCopies.nextResponse(false).orElseThrow());

    assertThat(other).as("the same objects: one encoding").isSameAs(one);
    assertThat(copies).as("equal objects are not the same ones: their own").isNotSameAs(one);
    assertThat(copies).isEqualTo(one);
  }

  @Test
  void newcomersThatSubscribedAlikeShareOneFirstStateAndItsEncoding() {
    SotwTypeState sotwFirst = new SotwTypeState(TypeUrl.ENDPOINT, before, false);
    SotwTypeState sotwSecond = new SotwTypeState(TypeUrl.ENDPOINT, before, false);
    SotwTypeState sotwFewer = new SotwTypeState(TypeUrl.ENDPOINT, before, false);
    sotwFirst.subscribe(List.of("a", "b", "c"));
    sotwSecond.subscribe(List.of("c", "b", "a"));
    sotwFewer.subscribe(List.of("a", "b"));
    DeltaTypeState deltaFirst =
        new DeltaTypeState(TypeUrl.ENDPOINT, before, false, Clock.systemUTC());
    DeltaTypeState deltaSecond =
        new DeltaTypeState(TypeUrl.ENDPOINT, before, false, Clock.systemUTC());
    DeltaTypeState deltaReconnected =
        new DeltaTypeState(TypeUrl.ENDPOINT, before, false, Clock.systemUTC());
    deltaFirst.subscribe(List.of("a", "b", "c"), List.of(), Map.of());
    deltaSecond.subscribe(List.of("a", "b", "c"), List.of(), Map.of());
    deltaReconnected.subscribe(
        List.of("a", "b", "c"), List.of(), Map.of("a", before.get("a").version()));

    DeltaTypeState wildcardFirst =
        new DeltaTypeState(TypeUrl.ENDPOINT, before, false, Clock.systemUTC());
    DeltaTypeState wildcardSecond =
        new DeltaTypeState(TypeUrl.ENDPOINT, before, false, Clock.systemUTC());
    wildcardFirst.subscribe(List.of(Subscription.WILDCARD), List.of(), Map.of());
    wildcardSecond.subscribe(List.of(Subscription.WILDCARD), List.of(), Map.of());

    SotwOutgoing sotw = sotwFirst.nextResponse(false).orElseThrow();
    DeltaTypeState.Outgoing delta = deltaFirst.nextResponse(false).orElseThrow();
    DeltaTypeState.Outgoing wildcard = wildcardFirst.nextResponse(false).orElseThrow();

    assertThat(sotw.included()).hasSize(3);
    assertThat(sotwSecond.nextResponse(false)).as("built once").containsSame(sotw);
    assertThat(sotwSecond.encoded(sotw)).as("encoded once").isSameAs(sotwFirst.encoded(sotw));
    assertThat(sotwFewer.nextResponse(false))
        .as("other names, another first state")
        .hasValueSatisfying(own -> assertThat(own.included()).hasSize(2));
    assertThat(deltaSecond.nextResponse(false)).as("built once").containsSame(delta);
    assertThat(deltaSecond.encoded(delta)).as("encoded once").isSameAs(deltaFirst.encoded(delta));
    assertThat(wildcardSecond.nextResponse(false))
        .as("a wildcard subscribed by a stream that holds nothing: built once")
        .containsSame(wildcard);
    assertThat(wildcard.included()).hasSize(3);
    assertThat(deltaReconnected.nextResponse(false))
        .as("what it claimed on reconnecting is its own: a is not sent again")
        .hasValueSatisfying(
            own -> {
              assertThat(own).isNotSameAs(delta);
              assertThat(own.included()).extracting(XdsResource::name).containsOnly("b", "c");
            });
    assertThat(
            new EncodedResponse(
                    delta.version(), TypeUrl.ENDPOINT.url(), "1", deltaSecond.encoded(delta))
                .toDelta()
                .getResourcesList())
        .extracting(Resource::getName)
        .containsExactlyInAnyOrder("a", "b", "c");
  }

  @Test
  void whatIsWrittenIsTheDeltaDiscoveryResponseItStandsFor() throws Exception {
    List<Resource> resources =
        List.of(endpoints("a", 1).toResource(), endpoints("b", 1).toResource());
    EncodedResponse response =
        new EncodedResponse(
            "v1",
            TypeUrl.ENDPOINT.url(),
            "7",
            EncodedResponse.deltaBody(resources, List.of("gone", "also-gone")));

    DeltaDiscoveryResponse expected =
        DeltaDiscoveryResponse.newBuilder()
            .setSystemVersionInfo("v1")
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .setNonce("7")
            .addAllResources(resources)
            .addRemovedResources("gone")
            .addRemovedResources("also-gone")
            .build();
    try (InputStream written = EncodedResponse.DELTA.stream(response)) {
      assertThat(written.available()).isEqualTo(expected.getSerializedSize());
      assertThat(DeltaDiscoveryResponse.parseFrom(written)).isEqualTo(expected);
    }
    assertThat(response.size()).isEqualTo(expected.getSerializedSize());
    assertThat(EncodedResponse.DELTA.parse(expected.toByteString().newInput()))
        .usingRecursiveComparison()
        .isEqualTo(response);
  }
}
