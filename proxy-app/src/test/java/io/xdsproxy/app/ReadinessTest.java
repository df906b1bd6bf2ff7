package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.ProxyFixture.serving;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * /readyz and the gRPC health service: ready once the upstream has been reached; alive regardless.
 */
class ReadinessTest {

  private static final Duration WAIT = Duration.ofSeconds(15);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private static int get(XdsProxy proxy, String path) throws Exception {
    return ProxyFixture.get(proxy, path).statusCode();
  }

  private static ServingStatus grpcHealth(ManagedChannel channel) {
    return HealthGrpc.newBlockingStub(channel)
        .check(HealthCheckRequest.getDefaultInstance())
        .getStatus();
  }

  @Test
  void aProxyIsNotReadyUntilItsControlPlaneHasBeenReachedButIsAliveMeanwhile() throws Exception {
    ControlPlane controlPlane = fixture.controlPlane();
    controlPlane.stop();
    XdsProxy proxy = fixture.proxy(against(controlPlane.target()));
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort()).usePlaintext().build();
    fixture.add(channel::shutdownNow);
    assertThat(get(proxy, "/healthz")).isEqualTo(200);
    assertThat(get(proxy, "/readyz")).isEqualTo(503);
    await().atMost(WAIT).until(() -> grpcHealth(channel) == ServingStatus.NOT_SERVING);

    controlPlane.start();

    await().atMost(WAIT).until(() -> get(proxy, "/readyz") == 200);
    await().atMost(WAIT).until(() -> grpcHealth(channel) == ServingStatus.SERVING);
  }

  @Test
  void aProxyServingADirectoryIsReadyAtOnce() throws Exception {
    XdsProxy proxy = fixture.proxy(serving(java.nio.file.Path.of("../deploy/examples/resources")));
    assertThat(get(proxy, "/readyz")).isEqualTo(200);
  }
}
