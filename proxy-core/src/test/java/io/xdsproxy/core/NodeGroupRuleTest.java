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

  private static final String NAMESPACE = "san:^spiffe://[^/]+/ns/([^/]+)/";
  private static final String SERVICE_ACCOUNT = "san:^spiffe://[^/]+/ns/[^/]+/sa/([^/]+)$";

  private static VerifiedIdentity certificate(String... names) {
    return new VerifiedIdentity(true, List.of(names), "10.0.0.1");
  }

  @Test
  void verifiedPartsAreReadFromTheCertificateWhateverTheNodeSays() throws Exception {
    NodeGroupRule rule = NodeGroupRule.of(List.of(NAMESPACE, SERVICE_ACCOUNT));
    VerifiedIdentity reviews =
        certificate("reviews.bookinfo.svc", "spiffe://cluster.local/ns/bookinfo/sa/reviews");

    assertThat(rule.keyOf(ISTIO_SIDECAR, reviews).parts()).containsExactly("bookinfo", "reviews");
    assertThat(rule.keyOf(Node.newBuilder().setCluster("bank").build(), reviews))
        .as("a node that claims another cluster")
        .isEqualTo(rule.keyOf(ISTIO_SIDECAR, reviews));
  }

  @Test
  void aClientWhoseCertificateProvesNoValueIsNotEntitledToAGroup() {
    NodeGroupRule rule = NodeGroupRule.of(List.of(NAMESPACE));

    assertThatThrownBy(() -> rule.keyOf(ISTIO_SIDECAR, VerifiedIdentity.anonymous("10.0.0.1")))
        .isInstanceOf(NodeGrouping.NotEntitledException.class)
        .hasMessageContaining("no client certificate");
    assertThatThrownBy(() -> rule.keyOf(ISTIO_SIDECAR, certificate("reviews.bookinfo.svc")))
        .isInstanceOf(NodeGrouping.NotEntitledException.class)
        .hasMessageContaining("reviews.bookinfo.svc")
        .hasMessageContaining(NAMESPACE);
    assertThatThrownBy(
            () ->
                rule.keyOf(
                    ISTIO_SIDECAR,
                    certificate(
                        "spiffe://cluster.local/ns/bookinfo/sa/reviews",
                        "spiffe://cluster.local/ns/bank/sa/vault")))
        .as("two names that prove two namespaces")
        .isInstanceOf(NodeGrouping.NotEntitledException.class)
        .hasMessageContaining("'bookinfo' and 'bank'");
  }

  @Test
  void aClaimBoundToTheCertificateMustAgreeWithItWhereTheNodeMakesIt() throws Exception {
    NodeGroupRule rule =
        NodeGroupRule.of(List.of("id:^[^~]*~[^~]*~[^.~]*\\.([^~]+)~=" + NAMESPACE));
    VerifiedIdentity bookinfo = certificate("spiffe://cluster.local/ns/bookinfo/sa/reviews");
    VerifiedIdentity bank = certificate("spiffe://cluster.local/ns/bank/sa/vault");

    assertThat(rule.keyOf(ISTIO_SIDECAR, bookinfo).value()).isEqualTo("bookinfo");
    assertThat(rule.keyOf(Node.newBuilder().setId("no-namespace-here").build(), bookinfo).value())
        .as("a node that makes no claim is grouped by its certificate")
        .isEqualTo("bookinfo");
    assertThatThrownBy(() -> rule.keyOf(ISTIO_SIDECAR, bank))
        .isInstanceOf(NodeGrouping.NotEntitledException.class)
        .hasMessageContaining("'bookinfo'")
        .hasMessageContaining("'bank'")
        .hasMessageContaining(ISTIO_SIDECAR.getId());
  }

  @Test
  void claimedPartsAreTheOnesNoCertificateBinds() {
    NodeGroupRule rule =
        NodeGroupRule.of(
            List.of("cluster", "id:^(.*)$", NAMESPACE, "metadata:NAMESPACE=" + NAMESPACE));

    assertThat(rule.claimedParts(false)).containsExactly("cluster", "id:^(.*)$");
    assertThat(rule.claimedParts(true))
        .as("with a node id that is a name of the certificate")
        .containsExactly("cluster");
  }

  @Test
  void noClientCanSpellAnotherGroupsKeyWithTheSeparator() throws Exception {
    NodeGroupRule rule = NodeGroupRule.of(List.of("cluster", "metadata:NAMESPACE"));
    Node one = ISTIO_SIDECAR.toBuilder().setCluster("a|b").build();
    Node other =
        Node.newBuilder()
            .setCluster("a")
            .setMetadata(
                Struct.newBuilder()
                    .putFields(
                        "NAMESPACE", Value.newBuilder().setStringValue("b|bookinfo").build()))
            .build();

    assertThat(rule.keyOf(one)).isNotEqualTo(rule.keyOf(other));
    assertThat(rule.keyOf(one).parts()).containsExactly("a|b", "bookinfo");
  }
}
