package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bench's mutual TLS, against the proxy's jar: the proxy it starts checks what production
 * checks, so a client is served only as the node group and node its certificate proves.
 */
class BenchTlsTest {

  private static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

  @TempDir Path logs;

  @Test
  void theProxyServesAClientOnlyAsTheGroupAndNodeItsCertificateProves() throws Exception {
    BenchTls tls = BenchTls.parse(new Args(new String[] {"--tls", "mutual"}));
    try (JavaProcess plane =
        BenchServers.startControlPlane(
            "",
            List.of("-Xmx256m"),
            2,
            5,
            BenchResources.Change.ENDPOINTS,
            logs.resolve("control-plane.log"))) {
      BenchServers.Proxy proxy =
          BenchServers.startProxy(
              Path.of("../proxy-app/target/xds-proxy.jar"),
              "",
              List.of("-Xmx256m"),
              BenchServers.ready(plane).port(),
              tls,
              logs.resolve("xds-proxy.log"));
      try (JavaProcess process = proxy.process()) {
        assertThat(proxy.tlsProvider()).as("the start-up line names the provider").isPresent();

        assertThat(firstAnswer(proxy, tls, 1, tls.nodeId(1, "own"), 1))
            .as("group 1's certificate, group 1's node")
            .isEqualTo(Status.Code.OK);
        assertThat(firstAnswer(proxy, tls, 1, tls.nodeId(1, "claims-group-0"), 0))
            .as("group 1's certificate, a node claiming group 0")
            .isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(firstAnswer(proxy, tls, 1, tls.nodeId(0, "id-of-group-0"), 1))
            .as("group 1's certificate, a node id of group 0's")
            .isEqualTo(Status.Code.PERMISSION_DENIED);
      }
    }
  }

  /**
   * OK if a client of {@code certificateGroup} that is node {@code nodeId} of {@code clusterGroup}
   * is answered its clusters, else the status its stream ended with.
   */
  private static Status.Code firstAnswer(
      BenchServers.Proxy proxy, BenchTls tls, int certificateGroup, String nodeId, int clusterGroup)
      throws Exception {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort(), tls.channel(certificateGroup))
            .build();
    try {
      CompletableFuture<Status.Code> answer = new CompletableFuture<>();
      StreamObserver<DiscoveryRequest> requests =
          AggregatedDiscoveryServiceGrpc.newStub(channel)
              .streamAggregatedResources(
                  new StreamObserver<>() {
                    @Override
                    public void onNext(DiscoveryResponse response) {
                      answer.complete(Status.Code.OK);
                    }

                    @Override
                    public void onError(Throwable t) {
                      answer.complete(Status.fromThrowable(t).getCode());
                    }

                    @Override
                    public void onCompleted() {
                      answer.complete(Status.Code.UNKNOWN);
                    }
                  });
      requests.onNext(
          DiscoveryRequest.newBuilder()
              .setNode(
                  Node.newBuilder()
                      .setId(nodeId)
                      .setCluster(BenchControlPlane.groupName(clusterGroup)))
              .setTypeUrl(CDS)
              .build());
      return answer.get(30, TimeUnit.SECONDS);
    } finally {
      channel.shutdownNow();
    }
  }
}
