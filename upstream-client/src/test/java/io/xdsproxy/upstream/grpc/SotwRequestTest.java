package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.xdsproxy.core.TypeUrl;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.util.List;
import org.junit.jupiter.api.Test;

class SotwRequestTest {

  private static final Node NODE =
      Node.newBuilder()
          .setId("sidecar~10.0.0.1~a.ns~ns.svc.cluster.local")
          .setCluster("a")
          .setMetadata(
              Struct.newBuilder()
                  .putFields("NAMESPACE", Value.newBuilder().setStringValue("ns").build()))
          .build();

  private static byte[] written(SotwRequest request) throws Exception {
    try (InputStream stream = SotwRequest.MARSHALLER.stream(request)) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      int stated = stream.available();
      ((io.grpc.Drainable) stream).drainTo(out);
      assertThat(out.size()).as("the length it states").isEqualTo(stated);
      return out.toByteArray();
    }
  }

  @Test
  void itsBytesAreThoseProtobufWritesForTheSameRequest() throws Exception {
    com.google.rpc.Status error =
        com.google.rpc.Status.newBuilder().setCode(3).setMessage("rejected").build();
    DiscoveryRequest expected =
        DiscoveryRequest.newBuilder()
            .setVersionInfo("v3")
            .setNode(NODE)
            .addAllResourceNames(List.of("a", "b", "ü"))
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .setResponseNonce("n9")
            .setErrorDetail(error)
            .build();

    SotwRequest request =
        SotwRequest.of(
            "v3",
            SotwRequest.node(NODE),
            SotwRequest.asked(TypeUrl.ENDPOINT, List.of("a", "b", "ü")),
            "n9",
            error);

    assertThat(written(request)).isEqualTo(expected.toByteArray());
    assertThat(request.toMessage()).isEqualTo(expected);
    assertThat(
            written(
                SotwRequest.of(
                    "",
                    SotwRequest.node(NODE),
                    SotwRequest.asked(TypeUrl.CLUSTER, List.of()),
                    "",
                    null)))
        .as("a first wildcard request: no names, no nonce, no error")
        .isEqualTo(
            DiscoveryRequest.newBuilder()
                .setNode(NODE)
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .build()
                .toByteArray());
  }

  @Test
  void groupsAskingForTheSameNamesShareOneEncodingOfThem() {
    assertThat(SotwRequest.asked(TypeUrl.ENDPOINT, List.of("x", "y")))
        .isSameAs(SotwRequest.asked(TypeUrl.ENDPOINT, List.of("x", "y")))
        .isNotSameAs(SotwRequest.asked(TypeUrl.CLUSTER, List.of("x", "y")));
  }
}
