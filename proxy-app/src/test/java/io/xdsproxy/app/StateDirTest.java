package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.xdsproxy.app.testing.Backend;
import io.xdsproxy.app.testing.ControlPlaneCell;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsClientChannel;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
      assertThat(fixture.get("/readyz").body()).isEqualTo("ready\n");
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
