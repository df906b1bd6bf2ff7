package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.Status;
import io.xdsproxy.core.TypeUrl;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Test;

/** The checks and limits a stream passes, alone: what each refusal says and how it is counted. */
class AdmissionTest {

  /** At most 3 names a request, 8 characters a name, 1 stream a node, 16 characters a node id. */
  private final Admission admission =
      new Admission(new Limits(1024, 3, 8, 100, 100, 1, 0, 512, 256, 4, 16), new Clients(), null);

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
              assertThat(refused.limit()).isEqualTo("names_per_request");
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
              assertThat(refused.limit()).isEqualTo("name_length");
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
    admission.count(node("n1"), NodeIdCheck.ANY);

    assertThatThrownBy(() -> admission.count(node("n1"), NodeIdCheck.ANY))
        .asInstanceOf(InstanceOfAssertFactories.type(Admission.Refused.class))
        .satisfies(
            refused -> {
              assertThat(refused.limit()).isEqualTo("streams_per_node");
              assertThat(refused.status().getDescription()).contains("--max-streams-per-node");
            });
    assertThatCode(() -> admission.count(node("n2"), NodeIdCheck.ANY))
        .as("another node")
        .doesNotThrowAnyException();
  }

  @Test
  void aNodePastItsSizesIsRefusedBeforeItIsCheckedOrCounted() throws Exception {
    Node large = node("x".repeat(17));
    assertThatThrownBy(() -> admission.count(large, id -> Optional.of("not checked first")))
        .asInstanceOf(InstanceOfAssertFactories.type(Admission.Refused.class))
        .satisfies(
            refused -> {
              assertThat(refused.kind()).isEqualTo(Admission.Kind.LIMIT);
              assertThat(refused.limit()).isEqualTo("node_string_length");
              assertThat(refused.status().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
              assertThat(refused.status().getDescription())
                  .contains("node.id of 17 characters", "--max-node-string-length");
            });
    admission.count(node("x".repeat(16)), NodeIdCheck.ANY);
  }

  @Test
  void aClientThatMayNotBeItsNodeIsDeniedAndNotCountedAsALimit() {
    assertThatThrownBy(() -> admission.count(node("n1"), id -> Optional.of("not n1")))
        .asInstanceOf(InstanceOfAssertFactories.type(Admission.Refused.class))
        .satisfies(
            refused -> {
              assertThat(refused.kind()).isEqualTo(Admission.Kind.NODE_ID);
              assertThat(refused.limit()).isNull();
              assertThat(refused.status().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
            });
    assertThatCode(() -> admission.count(node("n1"), NodeIdCheck.ANY))
        .as("the denied stream was not counted")
        .doesNotThrowAnyException();
  }
}
