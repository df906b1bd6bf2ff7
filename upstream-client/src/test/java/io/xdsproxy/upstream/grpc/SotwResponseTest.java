package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.ControlPlane;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import java.io.ByteArrayInputStream;
import org.junit.jupiter.api.Test;

class SotwResponseTest {

  private static Any cluster(String name) {
    return Any.pack(Cluster.newBuilder().setName(name).build());
  }

  @Test
  void readsWhatASessionReadsAndLeavesEachResourceAsItsBytes() throws Exception {
    DiscoveryResponse sent =
        DiscoveryResponse.newBuilder()
            .setVersionInfo("v7")
            .setTypeUrl("type.googleapis.com/envoy.config.cluster.v3.Cluster")
            .addResources(cluster("a"))
            .setCanary(true)
            .setControlPlane(ControlPlane.newBuilder().setIdentifier("istiod-1"))
            .addResources(cluster("b"))
            .setNonce("n1")
            .setUnknownFields(
                com.google.protobuf.UnknownFieldSet.newBuilder()
                    .addField(
                        99,
                        com.google.protobuf.UnknownFieldSet.Field.newBuilder()
                            .addLengthDelimited(ByteString.copyFromUtf8("a later field"))
                            .build())
                    .build())
            .build();

    // As gRPC hands a message over: a stream that knows its length.
    SotwResponse read =
        SotwResponse.MARSHALLER.parse(
            ProtoUtils.marshaller(DiscoveryResponse.getDefaultInstance()).stream(sent));

    assertThat(read.getVersionInfo()).isEqualTo("v7");
    assertThat(read.getTypeUrl()).isEqualTo(sent.getTypeUrl());
    assertThat(read.getNonce()).isEqualTo("n1");
    assertThat(read.resources().size()).isEqualTo(2);
    assertThat(read.resources().sameBytes(0, cluster("a").toByteArray())).isTrue();
    assertThat(read.resources().sameBytes(1, cluster("a").toByteArray())).isFalse();
    assertThat(read.resources().parse(1)).isEqualTo(cluster("b"));
  }

  @Test
  void aHeaderThatDoesNotParseFailsTheMessageAsTheGeneratedParserWould() {
    byte[] badNonce = {0x2a, 0x02, (byte) 0xc3, (byte) 0x28}; // nonce: invalid UTF-8
    byte[] truncated = {0x12, 0x10, 0x0a};

    for (byte[] bytes : new byte[][] {badNonce, truncated}) {
      assertThatThrownBy(() -> SotwResponse.MARSHALLER.parse(new ByteArrayInputStream(bytes)))
          .isInstanceOf(StatusRuntimeException.class)
          .hasMessageContaining("INTERNAL: Invalid protobuf byte sequence");
    }
  }
}
