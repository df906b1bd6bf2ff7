package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Extension;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Which nodes are within the sizes a node may have, and what a refusal says. */
class NodeLimitsTest {

  private static final Limits LIMITS =
      Limits.DEFAULTS
          .withMaxNodeBytes(4096)
          .withMaxNodeMetadataBytes(1024)
          .withMaxNodeMetadataDepth(3)
          .withMaxNodeStringLength(64);

  private static Value string(String value) {
    return Value.newBuilder().setStringValue(value).build();
  }

  private static Value struct(String key, Value value) {
    return Value.newBuilder().setStructValue(Struct.newBuilder().putFields(key, value)).build();
  }

  private static Value list(Value value) {
    return Value.newBuilder().setListValue(ListValue.newBuilder().addValues(value)).build();
  }

  private static Node withMetadata(Value value) {
    return Node.newBuilder()
        .setId("n1")
        .setCluster("fleet")
        .setMetadata(Struct.newBuilder().putFields("top", value))
        .build();
  }

  @Test
  void aNodeLikeAnIstioSidecarsIsWithinTheDefaults() {
    Struct.Builder labels = Struct.newBuilder();
    IntStream.range(0, 30).forEach(i -> labels.putFields("label-" + i, string("value-" + i)));
    Node.Builder node =
        Node.newBuilder()
            .setId(
                "sidecar~10.244.0.12~productpage-v1-6b746f74dc-9stvs.default~default.svc.cluster.local")
            .setCluster("productpage.default")
            .setUserAgentName("envoy")
            .setLocality(Locality.newBuilder().setRegion("us-east1").setZone("us-east1-b"))
            .setMetadata(
                Struct.newBuilder()
                    .putFields("LABELS", Value.newBuilder().setStructValue(labels).build())
                    .putFields(
                        "PROXY_CONFIG",
                        struct(
                            "tracing", struct("zipkin", struct("address", string("zipkin:9411")))))
                    .putFields("ISTIO_VERSION", string("1.22.0")));
    IntStream.range(0, 300)
        .forEach(
            i ->
                node.addExtensions(
                    Extension.newBuilder()
                        .setName("envoy.filters.http.extension_" + i)
                        .setCategory("envoy.filters.http")
                        .addTypeUrls(
                            "envoy.extensions.filters.http.extension_" + i + ".v3.Config")));

    assertThat(node.build().getSerializedSize()).isGreaterThan(20_000);
    assertThat(NodeLimits.refusal(node.build(), Limits.DEFAULTS)).isEmpty();
  }

  @Test
  void eachStringOfTheNodeIsBoundedAndTheRefusalNamesFieldNodeAndFlag() {
    assertThat(NodeLimits.refusal(Node.newBuilder().setId("x".repeat(64)).build(), LIMITS))
        .isEmpty();
    for (Node node :
        new Node[] {
          Node.newBuilder().setId("x".repeat(65)).build(),
          Node.newBuilder().setId("n1").setCluster("c".repeat(65)).build(),
          Node.newBuilder().setId("n1").setUserAgentVersion("v".repeat(65)).build(),
          Node.newBuilder()
              .setId("n1")
              .setLocality(Locality.newBuilder().setSubZone("z".repeat(65)))
              .build()
        }) {
      assertThat(NodeLimits.refusal(node, LIMITS))
          .hasValueSatisfying(
              refusal -> {
                assertThat(refusal.limit()).isEqualTo("node_string_length");
                assertThat(refusal.why())
                    .contains(
                        "of 65 characters, more than the 64 allowed", "--max-node-string-length");
              });
    }
    assertThat(
            NodeLimits.refusal(
                    Node.newBuilder().setId("n1").setCluster("c".repeat(65)).build(), LIMITS)
                .orElseThrow()
                .why())
        .startsWith("node 'n1' has a node.cluster of 65 characters");
  }

  @Test
  void aNodeIdInARefusalIsCutAndEscaped() {
    String id = "n1\n2026-01-01T00:00:00.000Z ERROR forged " + "x".repeat(1_000_000);

    String why =
        NodeLimits.refusal(Node.newBuilder().setId(id).build(), Limits.DEFAULTS)
            .orElseThrow()
            .why();

    assertThat(why)
        .startsWith("node 'n1\\n2026-01-01T00:00:00.000Z ERROR forged xxx")
        .doesNotContain("\n");
    assertThat(why).hasSizeLessThan(400).contains("…(+", "1000041 characters");
  }

  @Test
  void theWholeNodeIsBoundedExtensionsAndUnknownFieldsIncluded() {
    Node.Builder node = Node.newBuilder().setId("n1");
    IntStream.range(0, 400)
        .forEach(i -> node.addExtensions(Extension.newBuilder().setName("extension-" + i)));

    assertThat(NodeLimits.refusal(node.build(), LIMITS))
        .hasValueSatisfying(
            refusal -> {
              assertThat(refusal.limit()).isEqualTo("node_bytes");
              assertThat(refusal.why())
                  .contains(
                      "node 'n1' is", "bytes, more than the 4096 allowed", "--max-node-bytes");
            });
    Node unknown =
        Node.newBuilder()
            .setId("n1")
            .setUnknownFields(
                com.google.protobuf.UnknownFieldSet.newBuilder()
                    .addField(
                        9999,
                        com.google.protobuf.UnknownFieldSet.Field.newBuilder()
                            .addLengthDelimited(
                                com.google.protobuf.ByteString.copyFrom(new byte[5000]))
                            .build())
                    .build())
            .build();
    assertThat(NodeLimits.refusal(unknown, LIMITS).map(NodeLimits.Refusal::limit))
        .hasValue("node_bytes");
  }

  @Test
  void theMetadataIsBoundedInSize() {
    assertThat(NodeLimits.refusal(withMetadata(string("m".repeat(900))), LIMITS)).isEmpty();

    assertThat(NodeLimits.refusal(withMetadata(string("m".repeat(1100))), LIMITS))
        .hasValueSatisfying(
            refusal -> {
              assertThat(refusal.limit()).isEqualTo("node_metadata_bytes");
              assertThat(refusal.why())
                  .contains(
                      "bytes of node.metadata, more than the 1024 allowed",
                      "--max-node-metadata-bytes");
            });
  }

  @Test
  void theMetadataIsBoundedInDepthStructsAndListsAlike() {
    // The metadata is 1 deep; its "top" struct 2, a struct or a list in that 3.
    assertThat(NodeLimits.refusal(withMetadata(struct("a", struct("b", string("c")))), LIMITS))
        .isEmpty();
    assertThat(NodeLimits.refusal(withMetadata(struct("a", list(string("c")))), LIMITS)).isEmpty();

    for (Value tooDeep :
        new Value[] {
          struct("a", struct("b", struct("c", string("d")))),
          struct("a", list(list(string("d")))),
          list(list(list(string("d"))))
        }) {
      assertThat(NodeLimits.refusal(withMetadata(tooDeep), LIMITS))
          .hasValueSatisfying(
              refusal -> {
                assertThat(refusal.limit()).isEqualTo("node_metadata_depth");
                assertThat(refusal.why()).contains("more than 3 deep", "--max-node-metadata-depth");
              });
    }
  }

  @Test
  void everyLimitANodeCanBePastIsALabelOfTheLimitedCounter() {
    assertThat(StreamMetrics.LIMITS)
        .contains("node_bytes", "node_metadata_bytes", "node_metadata_depth", "node_string_length");
  }
}
