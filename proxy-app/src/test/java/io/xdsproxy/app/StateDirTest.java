package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.envoyproxy.envoy.service.status.v3.ClientConfig;
import io.envoyproxy.envoy.service.status.v3.ClientStatusDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.status.v3.ClientStatusRequest;
import io.envoyproxy.envoy.service.status.v3.ClientStatusResponse;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.xdsproxy.app.testing.Backend;
import io.xdsproxy.app.testing.ControlPlaneCell;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsClientChannel;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Fail-static with real peers: a proxy with {@code --state-dir} serves grpc-java xDS clients, is
 * stopped, and a new one is started on the same directory while the control plane (one of each
 * kind, SotW or Delta) is down. Clients that reconnect to it get the last good state, and it says
 * so (readiness, {@code /config_dump}); when the control plane comes back with new state, they
 * converge to it and the marks go.
 */
class StateDirTest {

  private static final Duration WAIT = Duration.ofSeconds(30);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void aProxyRestartedWithTheControlPlaneDownServesTheLastGoodState(
      ControlPlaneCell cell, @TempDir Path state) throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    Backend first = fixture.add(new Backend("first"));
    Backend second = fixture.add(new Backend("second"));
    ProxyConfig config = against(cell, controlPlane).withStateDir(state);
    XdsProxy proxy = fixture.proxy(config);
    controlPlane.setSnapshot("fleet", Resources.greeterAt(first.port(), "1"));
    try (XdsClientChannel before =
        new XdsClientChannel(proxy.xdsPort(), "before", "fleet", "greeter")) {
      await().atMost(WAIT).ignoreExceptions().until(before::whoAmI, "first"::equals);
    }
    Instant savedAfter = Instant.now().minusSeconds(1);
    proxy.close(); // what waits to be written is written on the way out
    controlPlane.stop();

    XdsProxy restarted = fixture.proxy(config);
    HttpResponse<String> readiness = fixture.get("/readyz");
    assertThat(readiness.statusCode())
        .as(
            "ready with state from disk though the upstream was never reached: %s",
            readiness.body())
        .isEqualTo(200);
    assertThat(readiness.body()).contains("from disk");

    try (XdsClientChannel after =
        new XdsClientChannel(restarted.xdsPort(), "after", "fleet", "greeter")) {
      await().atMost(WAIT).ignoreExceptions().until(after::whoAmI, "first"::equals);
      assertThat(fromDiskTypes())
          .as("/config_dump marks the types served from disk")
          .contains("envoy.config.listener.v3.Listener", "envoy.config.cluster.v3.Cluster");
      Instant restartedAt = Instant.now();
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(staticInCsds(restarted, "after"))
                      .as("CSDS tells the copies from disk as static, last updated when saved")
                      .containsKey("envoy.config.listener.v3.Listener/greeter")
                      .allSatisfy(
                          (name, lastUpdated) ->
                              assertThat(lastUpdated).isBefore(restartedAt).isAfter(savedAfter)));

      controlPlane.setSnapshot("fleet", Resources.greeterAt(second.port(), "2"));
      controlPlane.start();

      await().atMost(WAIT).ignoreExceptions().until(after::whoAmI, "second"::equals);
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(fromDiskTypes())
                      .as("once the upstream has answered, nothing is from disk")
                      .isEmpty());
      assertThat(staticInCsds(restarted, "after")).as("nor static in CSDS").isEmpty();
      assertThat(fixture.get("/readyz").body()).isEqualTo("ready\n");
    }
  }

  /**
   * What CSDS on {@code proxy}'s xDS port says node {@code nodeId} holds as static resources: type
   * (short name) and resource name, to when it was last updated.
   */
  private static Map<String, Instant> staticInCsds(XdsProxy proxy, String nodeId) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort()).usePlaintext().build();
    try {
      ClientStatusResponse response =
          ClientStatusDiscoveryServiceGrpc.newBlockingStub(channel)
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .fetchClientStatus(ClientStatusRequest.getDefaultInstance());
      Map<String, Instant> found = new TreeMap<>();
      for (ClientConfig config : response.getConfigList()) {
        if (config.getNode().getId().equals(nodeId)) {
          for (ClientConfig.GenericXdsConfig resource : config.getGenericXdsConfigsList()) {
            if (resource.getIsStaticResource()) {
              found.put(
                  resource.getTypeUrl().replaceFirst(".*/", "") + "/" + resource.getName(),
                  Instant.ofEpochSecond(
                      resource.getLastUpdated().getSeconds(),
                      resource.getLastUpdated().getNanos()));
            }
          }
        }
      }
      return found;
    } finally {
      channel.shutdownNow();
    }
  }

  /** The types {@code /config_dump} marks as served from disk, over every group. */
  private List<String> fromDiskTypes() {
    JsonObject dump = JsonParser.parseString(fixture.get("/config_dump").body()).getAsJsonObject();
    List<String> types = new ArrayList<>();
    for (JsonElement group : dump.getAsJsonArray("groups")) {
      JsonArray byType = group.getAsJsonObject().getAsJsonArray("types");
      for (JsonElement type : byType) {
        if (type.getAsJsonObject().has("from_disk")) {
          types.add(type.getAsJsonObject().get("type_url").getAsString().replaceFirst(".*/", ""));
        }
      }
    }
    return types;
  }
}
