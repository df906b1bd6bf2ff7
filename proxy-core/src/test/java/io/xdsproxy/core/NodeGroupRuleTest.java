package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.NodeGrouping.UngroupableNodeException;
import java.util.List;
import org.junit.jupiter.api.Test;

class NodeGroupRuleTest {

  private static final Node ISTIO_SIDECAR =
      Node.newBuilder()
          .setId("sidecar~10.1.2.3~reviews-v1-5d8f.bookinfo~bookinfo.svc.cluster.local")
          .setCluster("reviews.bookinfo")
          .setLocality(Locality.newBuilder().setRegion("eu-west1").setZone("eu-west1-b"))
          .setMetadata(
              Struct.newBuilder()
                  .putFields("NAMESPACE", Value.newBuilder().setStringValue("bookinfo").build())
                  .putFields(
                      "labels",
                      Value.newBuilder()
                          .setStructValue(
                              Struct.newBuilder()
                                  .putFields(
                                      "version", Value.newBuilder().setStringValue("v1").build())
                                  .putFields(
                                      "canary", Value.newBuilder().setBoolValue(true).build()))
                          .build()))
          .build();

  private static String keyOf(Node node, String... parts) throws UngroupableNodeException {
    return NodeGroupRule.of(List.of(parts)).keyOf(node).value();
  }

  @Test
  void eachPartReadsItsFieldOfTheNode() throws Exception {
    assertThat(keyOf(ISTIO_SIDECAR, "cluster")).isEqualTo("reviews.bookinfo");
    assertThat(keyOf(ISTIO_SIDECAR, "id:^[^~]*~[^~]*~[^.~]*\\.([^~]+)~")).isEqualTo("bookinfo");
    assertThat(keyOf(ISTIO_SIDECAR, "metadata:NAMESPACE")).isEqualTo("bookinfo");
    assertThat(keyOf(ISTIO_SIDECAR, "metadata:labels.version")).isEqualTo("v1");
    assertThat(keyOf(ISTIO_SIDECAR, "metadata:labels.canary")).isEqualTo("true");
    assertThat(keyOf(ISTIO_SIDECAR, "locality")).isEqualTo("eu-west1/eu-west1-b/");
  }

  @Test
  void partsCombineInOrder() throws Exception {
    assertThat(keyOf(ISTIO_SIDECAR, "metadata:NAMESPACE", "locality"))
        .isEqualTo("bookinfo|eu-west1/eu-west1-b/");
  }

  @Test
  void aNodeWithoutAPartIsRefusedNamingTheNodeAndThePart() {
    Node bare = Node.newBuilder().setId("bare-node").build();

    assertThatThrownBy(() -> keyOf(bare, "cluster"))
        .hasMessageContaining("'bare-node'")
        .hasMessageContaining("node.cluster");
    assertThatThrownBy(() -> keyOf(bare, "metadata:labels.version"))
        .hasMessageContaining("node.metadata.labels.version");
    assertThatThrownBy(() -> keyOf(bare, "locality")).hasMessageContaining("node.locality");
    assertThatThrownBy(() -> keyOf(bare, "id:^sidecar~(.+)$"))
        .hasMessageContaining("does not match");
    assertThatThrownBy(() -> keyOf(ISTIO_SIDECAR, "metadata:labels"))
        .hasMessageContaining("not a string");
  }

  @Test
  void aBadPartIsRefusedWhenTheRuleIsMade() {
    assertThatThrownBy(() -> NodeGroupRule.of(List.of("zone"))).hasMessageContaining("'zone'");
    assertThatThrownBy(() -> NodeGroupRule.of(List.of("id:no-group")))
        .hasMessageContaining("capture group");
    assertThatThrownBy(() -> NodeGroupRule.of(List.of("id:([")))
        .hasMessageContaining("not a regular expression");
    assertThatThrownBy(() -> NodeGroupRule.of(List.of())).hasMessageContaining("at least one part");
  }
}
