package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.Status;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.VerifiedIdentity;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Test;

/** The checks and limits a stream passes, alone: what each refusal says and how it is counted. */
class AdmissionTest {

  /** At most 3 names a request, 8 characters a name, 1 stream a node, 16 characters a node id. */
  private final Admission admission =
      new Admission(
          new Limits(1024, 3, 8, 100, 100, 1, 0, 10, 10, 1024, 512, 256, 4, 16),
          new Access(Optional.of(new NodeIdPattern("{san}")), true, false),
          new Clients(),
          null);

  private static VerifiedIdentity certified(String... names) {
    return new VerifiedIdentity(true, List.of(names), "10.0.0.1");
  }

  private static Node node(String id) {
    return Node.newBuilder().setId(id).build();
  }

  @Test
  void namesWithinTheLimitsPass() {
    assertThatCode(
            () -> admission.names("n1", TypeUrl.CLUSTER, 3, List.of("a", "b"), Set.of("12345678")))
        .doesNotThrowAnyException();
  }

  @Test
  void tooManyNamesAreResourceExhaustedNamingTheFlag() {
    assertThatThrownBy(() -> admission.names("n1", TypeUrl.CLUSTER, 4, List.of("a", "b", "c", "d")))
        .isInstanceOfSatisfying(
            Admission.Refused.class,
            refused -> {
              assertThat(refused.kind()).isEqualTo(Admission.Kind.LIMIT);
              assertThat(refused.counted()).isEqualTo("names_per_request");
              assertThat(refused.status().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
              assertThat(refused.status().getDescription())
                  .contains("names 4 resources", "node 'n1'", "--max-names-per-request");
            });
  }

  @Test
  void aTooLongNameIsInvalidAndShownCut() {
    assertThatThrownBy(
            () -> admission.names("n1", TypeUrl.CLUSTER, 2, List.of("a"), List.of("123456789")))
        .asInstanceOf(InstanceOfAssertFactories.type(Admission.Refused.class))
        .satisfies(
            refused -> {
              assertThat(refused.counted()).isEqualTo("name_length");
              assertThat(refused.status().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
              assertThat(refused.status().getDescription())
                  .contains("9 characters long", "'12345678…'", "--max-name-length");
            });
  }

  @Test
  void aSubscriptionPastTheLimitIsResourceExhausted() {
    assertThatCode(() -> admission.subscription("n1", TypeUrl.ENDPOINT, 3))
        .doesNotThrowAnyException();
    assertThatThrownBy(() -> admission.subscription("n1", TypeUrl.ENDPOINT, 4))
        .isInstanceOf(Admission.Refused.class)
        .hasMessageContaining("would be subscribed to 4");
  }

  @Test
  void aNodeGetsAsManyStreamsAsTheLimitAndNoMore() throws Exception {
    admission.count(node("n1"), certified("n1"));

    assertThatThrownBy(() -> admission.count(node("n1"), certified("n1")))
        .asInstanceOf(InstanceOfAssertFactories.type(Admission.Refused.class))
        .satisfies(
            refused -> {
              assertThat(refused.counted()).isEqualTo("streams_per_node");
              assertThat(refused.status().getDescription()).contains("--max-streams-per-node");
            });
    assertThatCode(() -> admission.count(node("n2"), certified("n2")))
        .as("another node")
        .doesNotThrowAnyException();
  }

  @Test
  void aNodePastItsSizesIsRefusedBeforeItIsCheckedOrCounted() throws Exception {
    Node large = node("x".repeat(17));
    assertThatThrownBy(() -> admission.count(large, certified("not-this-node")))
        .asInstanceOf(InstanceOfAssertFactories.type(Admission.Refused.class))
        .satisfies(
            refused -> {
              assertThat(refused.kind()).isEqualTo(Admission.Kind.LIMIT);
              assertThat(refused.counted()).isEqualTo("node_string_length");
              assertThat(refused.status().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
              assertThat(refused.status().getDescription())
                  .contains("node.id of 17 characters", "--max-node-string-length");
            });
    admission.count(node("x".repeat(16)), certified("x".repeat(16)));
  }

  @Test
  void aClientThatMayNotBeItsNodeIsDeniedAndNotCountedAsALimit() {
    assertThatThrownBy(() -> admission.count(node("n1"), certified("n2")))
        .asInstanceOf(InstanceOfAssertFactories.type(Admission.Refused.class))
        .satisfies(
            refused -> {
              assertThat(refused.kind()).isEqualTo(Admission.Kind.NODE_ID);
              assertThat(refused.counted()).isEqualTo("node_id");
              assertThat(refused.status().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
            });
    assertThatCode(() -> admission.count(node("n1"), certified("n1")))
        .as("the denied stream was not counted")
        .doesNotThrowAnyException();
  }

  @Test
  void secretsAreDeniedToAClientWhoseGroupNoCertificateDecides() {
    Admission plaintext =
        new Admission(Limits.DEFAULTS, new Access(Optional.empty(), false, false), null, null);

    assertThatThrownBy(
            () -> plaintext.type(TypeUrl.SECRET, VerifiedIdentity.anonymous("10.0.0.1"), "n1"))
        .asInstanceOf(InstanceOfAssertFactories.type(Admission.Refused.class))
        .satisfies(
            refused -> {
              assertThat(refused.kind()).isEqualTo(Admission.Kind.NOT_ENTITLED);
              assertThat(refused.counted()).isEqualTo("secrets");
              assertThat(refused.status().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
              assertThat(refused.status().getDescription())
                  .contains("node 'n1'", "--tls-client-ca", "--secrets-to-unverified-clients");
            });
    assertThatCode(
            () -> plaintext.type(TypeUrl.CLUSTER, VerifiedIdentity.anonymous("10.0.0.1"), "n1"))
        .doesNotThrowAnyException();
    assertThatCode(() -> admission.type(TypeUrl.SECRET, certified("n1"), "n1"))
        .as("a certified client of a group its certificate decides")
        .doesNotThrowAnyException();
  }
}
