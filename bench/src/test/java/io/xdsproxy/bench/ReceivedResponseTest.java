package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Message;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.bench.BenchResources.Change;
import io.xdsproxy.bench.ReceivedResponse.Expected;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The load generator's reading of responses against protobuf's full decode, on the responses the
 * benchmark's servers send (BenchResources' clusters and assignments): it must find what a full
 * decode finds, or the benchmark would count clients as holding a round they do not hold.
 */
class ReceivedResponseTest {

  private static final int CLUSTERS = 20;
  private static final int ROUNDS = 4;
  private static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
  private static final String EDS =
      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
  private static final byte[] CLUSTER_0 = "cluster-0".getBytes(StandardCharsets.UTF_8);

  @Test
  void readsTheVersionTypeAndNonceAFullDecodeReads() {
    DiscoveryResponse sotw = sotw(Change.CLUSTER, 2);
    DeltaDiscoveryResponse delta = delta(Change.ENDPOINTS, 3);
    for (byte[] encoded :
        List.of(
            sotw.toByteArray(), ownFieldsFirst(sotw), delta.toByteArray(), ownFieldsFirst(delta))) {
      ReceivedResponse read = read(encoded);
      DiscoveryResponse decoded = parseSotw(encoded);

      assertThat(read.size()).isEqualTo(encoded.length);
      assertThat(text(read.encode(1, ReceivedResponse.Part.VERSION)))
          .isEqualTo(text(DiscoveryRequest.newBuilder().setVersionInfo(decoded.getVersionInfo())));
      assertThat(read.typeIs(decoded.getTypeUrl().getBytes(StandardCharsets.UTF_8))).isTrue();
      assertThat(read.typeIs(bytes(EDS.equals(decoded.getTypeUrl()) ? CDS : EDS))).isFalse();
    }
  }

  @Test
  void findsTheChangedResourceInSotwResponsesExactlyWhereAFullDecodeDoes() {
    for (Change change : Change.values()) {
      for (int round = 0; round < ROUNDS; round++) {
        DiscoveryResponse decoded = sotw(change, round);
        for (byte[] encoded : List.of(decoded.toByteArray(), ownFieldsFirst(decoded))) {
          for (int expected = 0; expected < ROUNDS; expected++) {
            Any resource = BenchResources.changed(change, expected);
            assertThat(read(encoded).sotwCarries(Expected.of(resource)))
                .as("%s of round %d in a response of round %d", change, expected, round)
                .isEqualTo(decoded.getResourcesList().contains(resource))
                .isEqualTo(expected == round);
          }
        }
      }
    }
  }

  @Test
  void findsTheChangedResourceInDeltaResponsesExactlyWhereAFullDecodeDoes() {
    for (Change change : Change.values()) {
      for (int round = 0; round < ROUNDS; round++) {
        DeltaDiscoveryResponse decoded = delta(change, round);
        for (byte[] encoded : List.of(decoded.toByteArray(), ownFieldsFirst(decoded))) {
          for (int expected = 0; expected < ROUNDS; expected++) {
            Any resource = BenchResources.changed(change, expected);
            assertThat(read(encoded).deltaCarries(CLUSTER_0, Expected.of(resource)))
                .as("%s of round %d in a response of round %d", change, expected, round)
                .isEqualTo(
                    decoded.getResourcesList().stream()
                        .anyMatch(
                            r ->
                                r.getName().equals("cluster-0")
                                    && r.getResource().equals(resource)))
                .isEqualTo(expected == round);
          }
        }
      }
    }
  }

  @Test
  void aDeltaResourceCountsOnlyUnderTheChangedName() {
    Any round2 = BenchResources.changed(Change.ENDPOINTS, 2);
    byte[] misnamed =
        DeltaDiscoveryResponse.newBuilder()
            .setTypeUrl(EDS)
            .addResources(Resource.newBuilder().setName("cluster-1").setResource(round2))
            .build()
            .toByteArray();

    assertThat(read(misnamed).deltaCarries(CLUSTER_0, Expected.of(round2))).isFalse();
  }

  @Test
  void anAnyWithAFieldOfItsOwnIsNotTheExpectedResource() throws Exception {
    Any round1 = BenchResources.changed(Change.ENDPOINTS, 1);
    // Any's value (2) and an unknown field 3 after it: protobuf's Any.equals sees the unknown
    // field.
    byte[] value = round1.toByteArray();
    byte[] withUnknown = Arrays.copyOf(value, value.length + 2);
    withUnknown[value.length] = 3 << 3; // field 3, varint
    withUnknown[value.length + 1] = 1;
    ByteString.Output resource = ByteString.newOutput();
    CodedOutputStream out = CodedOutputStream.newInstance(resource);
    out.writeByteArray(DiscoveryResponse.RESOURCES_FIELD_NUMBER, withUnknown);
    out.flush();
    byte[] response =
        concat(
            DiscoveryResponse.newBuilder().setTypeUrl(EDS).build().toByteArray(),
            resource.toByteString().toByteArray());

    assertThat(parseSotw(response).getResourcesList()).doesNotContain(round1);
    assertThat(read(response).sotwCarries(Expected.of(round1))).isFalse();
  }

  @Test
  void aMalformedResponseFailsItsStream() {
    byte[] whole = sotw(Change.ENDPOINTS, 1).toByteArray();
    byte[] truncated = Arrays.copyOf(whole, whole.length - 5);

    assertThatThrownBy(() -> read(truncated))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("malformed xDS response");
  }

  @Test
  void acksAreTheBytesProtobufWritesForTheSameRequest() {
    Node node = Node.newBuilder().setId("client-7").setCluster("group-3").build();
    List<String> names = BenchResources.clusterNames(CLUSTERS);
    DiscoveryResponse sotw = sotw(Change.ENDPOINTS, 2);
    DeltaDiscoveryResponse delta = delta(Change.CLUSTER, 1);

    byte[] sotwAck =
        EncodedRequest.sotwAck(
                EncodedRequest.sotwNode(node),
                read(ownFieldsFirst(sotw)),
                EncodedRequest.names(names))
            .toByteArray();
    byte[] deltaAck =
        EncodedRequest.deltaAck(EncodedRequest.deltaNode(node), read(delta.toByteArray()))
            .toByteArray();
    byte[] versionless =
        EncodedRequest.sotwAck(
                EncodedRequest.sotwNode(node),
                read(sotw.toBuilder().clearVersionInfo().build().toByteArray()),
                new byte[0])
            .toByteArray();

    assertThat(sotwAck)
        .isEqualTo(
            DiscoveryRequest.newBuilder()
                .setVersionInfo(sotw.getVersionInfo())
                .setNode(node)
                .addAllResourceNames(names)
                .setTypeUrl(EDS)
                .setResponseNonce(sotw.getNonce())
                .build()
                .toByteArray());
    assertThat(deltaAck)
        .isEqualTo(
            DeltaDiscoveryRequest.newBuilder()
                .setNode(node)
                .setTypeUrl(CDS)
                .setResponseNonce(delta.getNonce())
                .build()
                .toByteArray());
    assertThat(versionless)
        .isEqualTo(
            DiscoveryRequest.newBuilder()
                .setNode(node)
                .setTypeUrl(EDS)
                .setResponseNonce(sotw.getNonce())
                .build()
                .toByteArray());
  }

  /** Every resource of the changed type in round {@code round}, as SotW sends the state. */
  private static DiscoveryResponse sotw(Change change, int round) {
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder()
            .setVersionInfo("v" + round)
            .setNonce("nonce-" + round)
            .setTypeUrl(change == Change.CLUSTER ? CDS : EDS);
    for (int i = 0; i < CLUSTERS; i++) {
      response.addResources(resource(change, i, round));
    }
    return response.build();
  }

  /** The same resources as a Delta response names them. */
  private static DeltaDiscoveryResponse delta(Change change, int round) {
    DeltaDiscoveryResponse.Builder response =
        DeltaDiscoveryResponse.newBuilder()
            .setSystemVersionInfo("v" + round)
            .setNonce("nonce-" + round)
            .setTypeUrl(change == Change.CLUSTER ? CDS : EDS);
    for (int i = 0; i < CLUSTERS; i++) {
      response.addResources(
          Resource.newBuilder()
              .setName(BenchResources.clusterName(i))
              .setVersion("r" + round)
              .setResource(resource(change, i, round)));
    }
    return response.build();
  }

  private static Any resource(Change change, int cluster, int round) {
    return change == Change.CLUSTER
        ? Any.pack(BenchResources.cluster(cluster, round))
        : Any.pack(BenchResources.endpoints(cluster, cluster == 0 ? round : 0));
  }

  /**
   * The response as the proxy writes it: its own fields (version, type, nonce) first, then the
   * shared, pre-encoded resources.
   */
  private static byte[] ownFieldsFirst(Message response) {
    Message.Builder own = response.toBuilder();
    Message.Builder resources = response.newBuilderForType();
    var field = response.getDescriptorForType().findFieldByName("resources");
    own.clearField(field);
    resources.setField(field, response.getField(field));
    return concat(own.build().toByteArray(), resources.build().toByteArray());
  }

  private static ReceivedResponse read(byte[] encoded) {
    return ReceivedResponse.MARSHALLER.parse(new ByteArrayInputStream(encoded));
  }

  private static DiscoveryResponse parseSotw(byte[] encoded) {
    try {
      // Version (1), resources (2), type (4) and nonce (5) are numbered alike in both messages.
      return DiscoveryResponse.parseFrom(encoded);
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw new AssertionError(e);
    }
  }

  private static String text(byte[] encoded) {
    return new String(encoded, StandardCharsets.ISO_8859_1);
  }

  private static String text(DiscoveryRequest.Builder request) {
    return text(request.build().toByteArray());
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] concat(byte[]... parts) {
    byte[] all = new byte[0];
    for (byte[] part : parts) {
      int at = all.length;
      all = Arrays.copyOf(all, at + part.length);
      System.arraycopy(part, 0, all, at, part.length);
    }
    return all;
  }
}
