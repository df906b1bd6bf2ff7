package io.xdsproxy.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** /readyz and the gRPC health service: ready once the upstream has been reached; alive regardless. */
class ReadinessTest {

  private static final Duration WAIT = Duration.ofSeconds(15);

  private static int get(XdsProxy proxy, String path) throws Exception {
    return HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.monitoringPort() + path)).build(),
        HttpResponse.BodyHandlers.discarding()).statusCode();
  }

  private static ServingStatus grpcHealth(ManagedChannel channel) {
    return HealthGrpc.newBlockingStub(channel).check(HealthCheckRequest.getDefaultInstance()).getStatus();
  }

  @Test
  void aProxyIsNotReadyUntilItsControlPlaneHasBeenReachedButIsAliveMeanwhile() throws Exception {
    try (ControlPlane controlPlane = new ControlPlane()) {
      controlPlane.stop();
      try (XdsProxy proxy = XdsProxy.start(ProxyConfig.DEFAULTS.withUpstream(controlPlane.target()).withPorts(0, 0, 0))) {
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort()).usePlaintext().build();
        try {
          assertThat(get(proxy, "/healthz")).isEqualTo(200);
          assertThat(get(proxy, "/readyz")).isEqualTo(503);
          await().atMost(WAIT).until(() -> grpcHealth(channel) == ServingStatus.NOT_SERVING);

          controlPlane.start();

          await().atMost(WAIT).until(() -> get(proxy, "/readyz") == 200);
          await().atMost(WAIT).until(() -> grpcHealth(channel) == ServingStatus.SERVING);
        } finally {
          channel.shutdownNow();
        }
      }
    }
  }

  @Test
  void aProxyServingADirectoryIsReadyAtOnce() throws Exception {
    try (XdsProxy proxy = XdsProxy.start(
        ProxyConfig.DEFAULTS.withResourcesDir(java.nio.file.Path.of("../deploy/examples/resources")).withPorts(0, 0, 0))) {
      assertThat(get(proxy, "/readyz")).isEqualTo(200);
    }
  }
}
