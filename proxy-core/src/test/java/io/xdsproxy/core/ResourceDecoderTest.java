package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.ResourceDecoder.Decoded;
import io.xdsproxy.core.ResourceDecoder.InvalidResourceException;
import java.util.List;
import org.junit.jupiter.api.Test;

class ResourceDecoderTest {

  private static Any cluster(String name) {
    return Any.pack(Cluster.newBuilder().setName(name).build());
  }

  @Test
  void namesComeFromFieldOneOfEveryType() throws Exception {
    Any endpoints = Any.pack(ClusterLoadAssignment.newBuilder().setClusterName("backend").build());

    Decoded decoded = ResourceDecoder.decode(TypeUrl.ENDPOINT, List.of(endpoints));

    assertThat(decoded.resources()).extracting(XdsResource::name).containsExactly("backend");
  }

  @Test
  void aBodyOfAnotherTypeIsRejectedNamingTheResource() {
    assertThatThrownBy(() -> ResourceDecoder.decode(TypeUrl.LISTENER, List.of(cluster("c"))))
        .isInstanceOf(InvalidResourceException.class)
        .hasMessageContaining("resource #0")
        .hasMessageContaining("envoy.config.cluster.v3.Cluster");
  }

  @Test
  void bytesThatDoNotParseAreRejected() {
    Any garbage =
        Any.newBuilder()
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .setValue(ByteString.copyFromUtf8("\u00ff\u00ff\u00ff"))
            .build();

    assertThatThrownBy(() -> ResourceDecoder.decode(TypeUrl.CLUSTER, List.of(garbage)))
        .isInstanceOf(InvalidResourceException.class)
        .hasMessageContaining("does not parse as envoy.config.cluster.v3.Cluster");
  }

  @Test
  void theSameNameTwiceIsRejected() {
    assertThatThrownBy(
            () -> ResourceDecoder.decode(TypeUrl.CLUSTER, List.of(cluster("c"), cluster("c"))))
        .isInstanceOf(InvalidResourceException.class)
        .hasMessageContaining("'c' appears twice");
  }

  @Test
  void aResourceWrapperCarriesVersionTtlAndDoNotCacheAndAHeartbeatIsToldApart() throws Exception {
    Any wrapped =
        Any.pack(
            Resource.newBuilder()
                .setName("c")
                .setVersion("v7")
                .setResource(cluster("c"))
                .setTtl(Durations.fromSeconds(30))
                .setCacheControl(Resource.CacheControl.newBuilder().setDoNotCache(true))
                .build());
    Any heartbeat =
        Any.pack(
            Resource.newBuilder()
                .setName("d")
                .setVersion("v1")
                .setTtl(Durations.fromSeconds(30))
                .build());

    Decoded decoded = ResourceDecoder.decode(TypeUrl.CLUSTER, List.of(wrapped, heartbeat));

    XdsResource resource = decoded.resources().get(0);
    assertThat(resource.version()).isEqualTo("v7");
    assertThat(resource.ttl()).contains(Durations.fromSeconds(30));
    assertThat(resource.doNotCache()).isTrue();
    assertThat(decoded.heartbeats()).containsExactly("d");
  }

  @Test
  void opaqueTypesAreNamedWithoutTheirSchema() throws Exception {
    TypeUrl opaque = TypeUrl.parse("type.googleapis.com/example.v1.Widget");
    Any widget =
        Any.newBuilder()
            .setTypeUrl(opaque.url())
            .setValue(Cluster.newBuilder().setName("w").build().toByteString())
            .build();

    assertThat(ResourceDecoder.decode(opaque, List.of(widget)).resources())
        .extracting(XdsResource::name)
        .containsExactly("w");
  }

  @Test
  void malformedTypeUrlsAreRefusedWithAReason() {
    assertThatThrownBy(() -> TypeUrl.parse("not a type")).hasMessageContaining("not of the form");
    assertThatThrownBy(() -> TypeUrl.parse("")).hasMessageContaining("empty");
  }

  @Test
  void aBodyEqualToTheOneHeldIsTheHeldResourceAndAChangedOneIsDecoded() throws Exception {
    XdsResource held =
        ResourceDecoder.decode(TypeUrl.CLUSTER, List.of(cluster("a"))).resources().get(0);
    Any changed =
        Any.pack(
            io.envoyproxy.envoy.config.cluster.v3.Cluster.newBuilder()
                .setName("b")
                .setAltStatName("new")
                .build());
    java.util.Map<String, XdsResource> previous =
        java.util.Map.of(
            "a",
            held,
            "b",
            ResourceDecoder.decode(TypeUrl.CLUSTER, List.of(cluster("b"))).resources().get(0));

    List<XdsResource> again =
        ResourceDecoder.decode(
                TypeUrl.CLUSTER,
                EncodedBodies.of(List.of(cluster("a"), changed)),
                previous::get,
                List.of(),
                List.of())
            .resources();

    assertThat(again.get(0)).as("not decoded again").isSameAs(held);
    assertThat(again.get(1).body()).isEqualTo(changed);
    assertThat(again.get(1)).isNotSameAs(previous.get("b"));
  }

  @Test
  void aHeldResourceDoesNotExcuseTheChecks() {
    XdsResource held = XdsResource.of("c", cluster("c"));

    assertThatThrownBy(
            () ->
                ResourceDecoder.decode(
                    TypeUrl.CLUSTER,
                    EncodedBodies.of(List.of(cluster("c"), cluster("c"))),
                    name -> held,
                    List.of(),
                    List.of()))
        .isInstanceOf(InvalidResourceException.class)
        .hasMessageContaining("appears twice");
  }

  @Test
  void aBodyInItsPlaceInTheLastResponseIsTheResourceHeldThereWhileItIsStillHeld() throws Exception {
    ResourceDecoder.DecodedBodies first = decodeAnew(List.of(cluster("a"), cluster("b")));
    List<XdsResource> last = first.resources();
    java.util.Map<String, XdsResource> held = new java.util.HashMap<>();
    last.forEach(resource -> held.put(resource.name(), resource));
    java.util.function.Function<List<Any>, List<XdsResource>> decodeAfterLast =
        bodies -> {
          try {
            return ResourceDecoder.decode(
                    TypeUrl.CLUSTER, EncodedBodies.of(bodies), held::get, last, first.encoded())
                .resources();
          } catch (InvalidResourceException e) {
            throw new AssertionError(e);
          }
        };

    List<XdsResource> inPlace = decodeAfterLast.apply(List.of(cluster("a"), cluster("b")));
    List<XdsResource> swapped = decodeAfterLast.apply(List.of(cluster("b"), cluster("a")));
    held.remove("a");
    List<XdsResource> afterAWasDropped = decodeAfterLast.apply(List.of(cluster("a"), cluster("b")));

    assertThat(inPlace.get(0)).isSameAs(last.get(0));
    assertThat(inPlace.get(1)).isSameAs(last.get(1));
    assertThat(swapped.get(0)).as("found by its name out of place").isSameAs(last.get(1));
    assertThat(swapped.get(1)).isSameAs(last.get(0));
    assertThat(afterAWasDropped.get(0))
        .as("in its place, but no longer held: not taken from its place, found among the shared")
        .isSameAs(SharedResources.plain(cluster("a")))
        .isEqualTo(last.get(0));
    assertThat(afterAWasDropped.get(1)).isSameAs(last.get(1));
  }

  @Test
  void twoGroupsReceivingTheSameBytesHoldOneResource() throws Exception {
    // Each group's session parses its own copy of the bytes, as gRPC hands each response over.
    Any forOne = Any.parseFrom(cluster("shared-by-groups").toByteArray());
    Any forOther = Any.parseFrom(cluster("shared-by-groups").toByteArray());

    XdsResource one = ResourceDecoder.decode(TypeUrl.CLUSTER, List.of(forOne)).resources().get(0);
    XdsResource other =
        ResourceDecoder.decode(TypeUrl.CLUSTER, List.of(forOther)).resources().get(0);

    assertThat(other).isSameAs(one);
    assertThat(
            ResourceDecoder.decodeWrapped(
                TypeUrl.CLUSTER,
                0,
                Resource.newBuilder()
                    .setName("shared-by-groups")
                    .setVersion(one.version())
                    .setResource(Any.parseFrom(forOther.toByteArray()))
                    .build()))
        .as("a Delta wrapper that says no more than the body")
        .isSameAs(one);
  }

  @Test
  void sharedBytesAreStillCheckedAgainstTheResponsesType() throws Exception {
    ResourceDecoder.decode(TypeUrl.CLUSTER, List.of(cluster("shared-then-misplaced")));

    assertThatThrownBy(
            () ->
                ResourceDecoder.decode(TypeUrl.LISTENER, List.of(cluster("shared-then-misplaced"))))
        .isInstanceOf(InvalidResourceException.class)
        .hasMessageContaining("envoy.config.cluster.v3.Cluster");
  }

  @Test
  void whatAWrapperAddsIsNeverShared() throws Exception {
    Any body = cluster("uncacheable-in-two-groups");
    Resource uncacheable =
        Resource.newBuilder()
            .setName("uncacheable-in-two-groups")
            .setResource(body)
            .setCacheControl(Resource.CacheControl.newBuilder().setDoNotCache(true))
            .build();
    Resource withTtl =
        Resource.newBuilder()
            .setName("uncacheable-in-two-groups")
            .setResource(body)
            .setTtl(Durations.fromSeconds(5))
            .build();

    assertThat(ResourceDecoder.decodeWrapped(TypeUrl.CLUSTER, 0, uncacheable))
        .as("each delivery of a do_not_cache resource is a new object")
        .isNotSameAs(ResourceDecoder.decodeWrapped(TypeUrl.CLUSTER, 0, uncacheable));
    assertThat(ResourceDecoder.decodeWrapped(TypeUrl.CLUSTER, 0, withTtl))
        .isNotSameAs(ResourceDecoder.decodeWrapped(TypeUrl.CLUSTER, 0, withTtl));
    XdsResource plain = ResourceDecoder.decode(TypeUrl.CLUSTER, List.of(body)).resources().get(0);
    assertThat(plain.doNotCache()).isFalse();
    assertThat(plain.ttl()).isEmpty();
  }

  @Test
  void bytesInTheirPlaceAreTheResourceHeldThereAndOnlyChangedBytesAreParsed() throws Exception {
    ResourceDecoder.DecodedBodies first =
        decodeAnew(List.of(cluster("bytes-a"), cluster("bytes-b")));
    java.util.Map<String, XdsResource> held = new java.util.HashMap<>();
    first.resources().forEach(resource -> held.put(resource.name(), resource));
    Any changed =
        Any.pack(
            Cluster.newBuilder()
                .setName("bytes-b")
                .setConnectTimeout(Durations.fromSeconds(3))
                .build());

    ResourceDecoder.DecodedBodies again =
        ResourceDecoder.decode(
            TypeUrl.CLUSTER,
            EncodedBodies.of(List.of(cluster("bytes-a"), changed)),
            held::get,
            first.resources(),
            first.encoded());

    assertThat(first.encoded())
        .containsExactly(cluster("bytes-a").toByteArray(), cluster("bytes-b").toByteArray());
    assertThat(again.resources().get(0)).isSameAs(first.resources().get(0));
    assertThat(again.encoded().get(0)).isSameAs(first.encoded().get(0));
    assertThat(again.resources().get(1).body()).isEqualTo(changed);
    assertThat(again.encoded().get(1)).isEqualTo(changed.toByteArray());
  }

  @Test
  void aChangedBodyThatRepeatsANameHeldInPlaceIsRejected() throws Exception {
    ResourceDecoder.DecodedBodies first =
        decodeAnew(List.of(cluster("twice-a"), cluster("twice-b")));
    java.util.Map<String, XdsResource> held = new java.util.HashMap<>();
    first.resources().forEach(resource -> held.put(resource.name(), resource));
    Any anotherA =
        Any.pack(
            Cluster.newBuilder()
                .setName("twice-a")
                .setConnectTimeout(Durations.fromSeconds(3))
                .build());

    assertThatThrownBy(
            () ->
                ResourceDecoder.decode(
                    TypeUrl.CLUSTER,
                    EncodedBodies.of(List.of(cluster("twice-a"), anotherA)),
                    held::get,
                    first.resources(),
                    first.encoded()))
        .isInstanceOf(InvalidResourceException.class)
        .hasMessageContaining("'twice-a' appears twice");
  }

  @Test
  void aNameTwiceAmongManyNewBodiesIsRejected() {
    List<Any> bodies = new java.util.ArrayList<>();
    for (int i = 0; i < 12; i++) {
      bodies.add(cluster("many-" + i));
    }
    bodies.add(cluster("many-3"));

    assertThatThrownBy(
            () ->
                ResourceDecoder.decode(
                    TypeUrl.CLUSTER, EncodedBodies.of(bodies), name -> null, List.of(), List.of()))
        .isInstanceOf(InvalidResourceException.class)
        .hasMessageContaining("resource #12: name 'many-3' appears twice");
  }

  @Test
  void bytesThatAreNoAnyAreRejectedNamingTheResource() {
    byte[] message = {0x0a, 0x03, (byte) 0xff, (byte) 0xff, (byte) 0xff};
    EncodedBodies garbage = EncodedBodies.in(message).add(0, message.length).build();

    assertThatThrownBy(
            () ->
                ResourceDecoder.decode(
                    TypeUrl.CLUSTER, garbage, name -> null, List.of(), List.of()))
        .isInstanceOf(InvalidResourceException.class)
        .hasMessageContaining("resource #0 is not an Any");
  }

  /** Decodes {@code bodies} from their bytes as a group's session does, holding nothing yet. */
  private static ResourceDecoder.DecodedBodies decodeAnew(List<Any> bodies)
      throws InvalidResourceException {
    return ResourceDecoder.decode(
        TypeUrl.CLUSTER, EncodedBodies.of(bodies), name -> null, List.of(), List.of());
  }
}
