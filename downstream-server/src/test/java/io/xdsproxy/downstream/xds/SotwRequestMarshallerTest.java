package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.Status;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import java.io.ByteArrayOutputStream;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class SotwRequestMarshallerTest {

  private final SotwRequestMarshaller marshaller = new SotwRequestMarshaller();
  private final List<String> names =
      IntStream.range(0, 500).mapToObj(i -> "outbound|8080||service-" + i).toList();

  private DiscoveryRequest ack(String nonce) {
    return DiscoveryRequest.newBuilder()
        .setVersionInfo("v7")
        .setNode(Node.newBuilder().setId("envoy-1").setCluster("fleet"))
        .addAllResourceNames(names)
        .setTypeUrl("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment")
        .setResponseNonce(nonce)
        .setErrorDetail(Status.newBuilder().setMessage("no"))
        .build();
  }

  @Test
  void aRequestReadsAsTheProtobufParserReadsIt() throws Exception {
    DiscoveryRequest request = ack("1");

    assertThat(marshaller.parse(request.toByteArray())).isEqualTo(request);
    assertThat(marshaller.parse(marshaller.stream(request))).isEqualTo(request);
  }

  @Test
  void theSameNamesAgainAreNotDecodedAgain() throws Exception {
    DiscoveryRequest first = marshaller.parse(ack("1").toByteArray());
    DiscoveryRequest second = marshaller.parse(ack("2").toByteArray());

    assertThat(second.getResponseNonce()).isEqualTo("2");
    assertThat(second.getResourceNamesList()).isEqualTo(names);
    for (int i = 0; i < names.size(); i++) {
      assertThat(second.getResourceNames(i))
          .as("name %d is the string decoded the first time", i)
          .isSameAs(first.getResourceNames(i));
    }
  }

  @Test
  void namesOfTheSameLengthThatDifferOnlyInTheMiddleAreNotConfused() throws Exception {
    List<String> other = new java.util.ArrayList<>(names);
    other.set(250, "outbound|8080||service-X50");
    DiscoveryRequest first = marshaller.parse(ack("1").toByteArray());
    DiscoveryRequest second =
        marshaller.parse(
            ack("2").toBuilder()
                .clearResourceNames()
                .addAllResourceNames(other)
                .build()
                .toByteArray());

    assertThat(first.getResourceNamesList()).isEqualTo(names);
    assertThat(second.getResourceNamesList()).isEqualTo(other);
    assertThat(second.getSerializedSize()).isEqualTo(ack("2").getSerializedSize());
  }

  @Test
  void namesSplitByAnotherFieldAndFewNamesAreReadAsUsual() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    for (int i = 0; i < 20; i++) {
      out.writeString(DiscoveryRequest.RESOURCE_NAMES_FIELD_NUMBER, "a" + i);
    }
    out.writeString(
        DiscoveryRequest.TYPE_URL_FIELD_NUMBER,
        "type.googleapis.com/envoy.config.cluster.v3.Cluster");
    for (int i = 0; i < 20; i++) {
      out.writeString(DiscoveryRequest.RESOURCE_NAMES_FIELD_NUMBER, "b" + i);
    }
    out.flush();

    DiscoveryRequest split = marshaller.parse(bytes.toByteArray());

    assertThat(split).isEqualTo(DiscoveryRequest.parseFrom(bytes.toByteArray()));
    assertThat(split.getResourceNamesCount()).isEqualTo(40);
    DiscoveryRequest few =
        DiscoveryRequest.newBuilder().addResourceNames("x").setResponseNonce("n").build();
    assertThat(marshaller.parse(few.toByteArray())).isEqualTo(few);
  }

  @Test
  void garbageIsRefusedAsTheProtobufParserRefusesIt() {
    byte[] garbage = ByteString.copyFromUtf8("\u0012\u00ffnot a request at all").toByteArray();

    assertThatThrownBy(() -> marshaller.parse(garbage))
        .isInstanceOf(InvalidProtocolBufferException.class);
  }
}
