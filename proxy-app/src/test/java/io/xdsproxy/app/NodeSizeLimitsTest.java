package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.cluster.v3.ClusterDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Status;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.xds.Limits;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A client whose node is past one of the sizes a node may have (DESIGN invariant 12), on every
 * service that takes a node: refused with a status naming the limit, the node and the flag, before
 * its node is grouped or kept (no group opened, no upstream stream), counted, and no one else is
 * disturbed.
 */
class NodeSizeLimitsTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  private static final Limits SMALL =
      Limits.DEFAULTS
          .withMaxNodeBytes(32 * 1024)
          .withMaxNodeMetadataBytes(8 * 1024)
          .withMaxNodeMetadataDepth(4)
          .withMaxNodeStringLength(128);

  /** A node past each limit, of a group of its own, and what its refusal names. */
  enum TooLarge {
    STRING("node_string_length", "--max-node-string-length", "node.cluster of 1000 characters") {
      @Override
      Node large() {
        return node("big", "big-" + "c".repeat(996));
      }
    },
    METADATA("node_metadata_bytes", "--max-node-metadata-bytes", "bytes of node.metadata") {
      @Override
      Node large() {
        return node("big", "big-metadata").toBuilder()
            .setMetadata(Struct.newBuilder().putFields("blob", string("m".repeat(9 * 1024))))
            .build();
      }
    },
    DEPTH("node_metadata_depth", "--max-node-metadata-depth", "nested more than 4 deep") {
      @Override
      Node large() {
        Value deep = string("bottom");
        for (int i = 0; i < 4; i++) {
          deep =
              Value.newBuilder().setStructValue(Struct.newBuilder().putFields("in", deep)).build();
        }
        return node("big", "big-depth").toBuilder()
            .setMetadata(Struct.newBuilder().putFields("top", deep))
            .build();
      }
    },
    WHOLE("node_bytes", "--max-node-bytes", "bytes, more than the 32768 allowed") {
      @Override
      Node large() {
        Node.Builder node = node("big", "big-whole").toBuilder();
        IntStream.range(0, 1000)
            .forEach(
                i -> node.addClientFeatures("envoy.lb.does_not_support_overprovisioning." + i));
        return node.build();
      }
    };

    final String limit;
    final String flag;
    final String what;

    TooLarge(String limit, String flag, String what) {
      this.limit = limit;
      this.flag = flag;
      this.what = what;
    }

    abstract Node large();

    private static Value string(String value) {
      return Value.newBuilder().setStringValue(value).build();
    }
  }

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private final HttpClient http = HttpClient.newHttpClient();
  private ControlPlane controlPlane;
  private XdsProxy proxy;
  private XdsTestClient<DiscoveryRequest, DiscoveryResponse> bystander;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot(
        "fleet",
        Snapshot.create(
            List.of(Resources.cluster("a")),
            List.of(Resources.endpoints("a", 8080)),
            List.of(),
            List.of(),
            List.of(),
            "1"));
    proxy = fixture.proxy(against(controlPlane.target()).withLimits(SMALL).withRestPort(0));
    bystander = fixture.sotwAds();
    bystander.send(
        DiscoveryRequest.newBuilder()
            .setNode(node("bystander", "fleet"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    assertThat(bystander.next(WAIT).getResourcesCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @EnumSource(TooLarge.class)
  void onSotwAdsTheStreamIsRefusedBeforeItsNodeIsGrouped(TooLarge tooLarge) {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(sotw(tooLarge.large()));
      assertRefused(client.awaitEnd(WAIT), tooLarge);
    }
    nothingKeptAndOthersServed(tooLarge);
  }

  @ParameterizedTest
  @EnumSource(TooLarge.class)
  void onDeltaAdsTheStreamIsRefusedBeforeItsNodeIsGrouped(TooLarge tooLarge) {
    try (var client = XdsTestClient.deltaAds(proxy.xdsPort())) {
      client.send(delta(tooLarge.large()));
      assertRefused(client.awaitEnd(WAIT), tooLarge);
    }
    nothingKeptAndOthersServed(tooLarge);
  }

  @ParameterizedTest
  @EnumSource(TooLarge.class)
  void onAPerTypeServiceTheStreamIsRefusedBeforeItsNodeIsGrouped(TooLarge tooLarge) {
    try (var sotw =
            new XdsTestClient<>(
                proxy.xdsPort(), ClusterDiscoveryServiceGrpc.getStreamClustersMethod());
        var delta =
            new XdsTestClient<>(
                proxy.xdsPort(), ClusterDiscoveryServiceGrpc.getDeltaClustersMethod())) {
      sotw.send(sotw(tooLarge.large()));
      delta.send(delta(tooLarge.large()));
      assertRefused(sotw.awaitEnd(WAIT), tooLarge);
      assertRefused(delta.awaitEnd(WAIT), tooLarge);
    }
    nothingKeptAndOthersServed(tooLarge);
  }

  @ParameterizedTest
  @EnumSource(TooLarge.class)
  void aRestPollIsRefusedWith413BeforeItsNodeIsGrouped(TooLarge tooLarge) throws Exception {
    HttpResponse<String> response =
        http.send(
            HttpRequest.newBuilder(
                    URI.create(
                        "http://127.0.0.1:"
                            + proxy.restPort().orElseThrow()
                            + "/v3/discovery:clusters"))
                .POST(HttpRequest.BodyPublishers.ofString(json(sotw(tooLarge.large()))))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).as(response.body()).isEqualTo(413);
    assertThat(response.body()).contains("node 'big'", tooLarge.what, tooLarge.flag);
    nothingKeptAndOthersServed(tooLarge);
  }

  private static DiscoveryRequest sotw(Node node) {
    return DiscoveryRequest.newBuilder().setNode(node).setTypeUrl(TypeUrl.CLUSTER.url()).build();
  }

  private static DeltaDiscoveryRequest delta(Node node) {
    return DeltaDiscoveryRequest.newBuilder()
        .setNode(node)
        .setTypeUrl(TypeUrl.CLUSTER.url())
        .build();
  }

  private static String json(Message message) throws Exception {
    return JsonFormat.printer().usingTypeRegistry(ApiTypes.json()).print(message);
  }

  private static void assertRefused(Status status, TooLarge tooLarge) {
    assertThat(status.getCode()).as(status.toString()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(status.getDescription()).contains("node 'big'", tooLarge.what, tooLarge.flag);
  }

  /**
   * No group but the bystander's was opened, nor an upstream stream for the large node; the refusal
   * was counted; the bystander is still served.
   */
  private void nothingKeptAndOthersServed(TooLarge tooLarge) {
    assertThat(proxy.groups().groups())
        .extracting(NodeGroup::key)
        .extracting(key -> key.value())
        .containsExactly("fleet");
    assertThat(controlPlane.streamGroups()).containsOnly("fleet");
    assertThat(fixture.scrape())
        .containsPattern(
            "xds_downstream_limited_total\\{limit=\"" + tooLarge.limit + "\"} [1-9]\\d*\\.0");
    bystander.send(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .addResourceNames("a")
            .build());
    assertThat(bystander.next(WAIT).getResourcesCount()).isEqualTo(1);
  }
}
