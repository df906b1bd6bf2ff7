package io.xdsproxy.app;

import static org.awaitility.Awaitility.await;

import io.xdsproxy.app.testing.Backend;
import io.xdsproxy.app.testing.ExampleResources;
import io.xdsproxy.app.testing.XdsClientChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded default: the example resource directory shipped in deploy/ served as the upstream,
 * to grpc-java's xDS client, and an edit of a file reaching the client.
 */
class FileSystemThroughProxyTest {

  private static final Duration WAIT = Duration.ofSeconds(15);

  @TempDir
  Path resources;

  @Test
  void theShippedExampleReachesAGrpcClientAndAFileEditMovesItToAnotherBackend() throws Exception {
    try (Backend first = new Backend("first"); Backend second = new Backend("second")) {
      ExampleResources.copyPointingAt(resources, first.port());
      try (XdsProxy proxy = XdsProxy.start(ProxyConfig.DEFAULTS.withResourcesDir(resources).withPorts(0, 0, 0));
          XdsClientChannel client = new XdsClientChannel(proxy.xdsPort(), "client-1", "local", "example-service")) {

        await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "first"::equals);

        ExampleResources.copyPointingAt(resources, second.port());

        await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "second"::equals);
      }
    }
  }

  @Test
  void anInPlaceEditOfTheEndpointsFileIsPickedUp() throws Exception {
    try (Backend first = new Backend("first"); Backend second = new Backend("second")) {
      ExampleResources.copyPointingAt(resources, first.port());
      try (XdsProxy proxy = XdsProxy.start(ProxyConfig.DEFAULTS.withResourcesDir(resources).withPorts(0, 0, 0));
          XdsClientChannel client = new XdsClientChannel(proxy.xdsPort(), "client-1", "local", "example-service")) {
        await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "first"::equals);

        Path endpoints = resources.resolve("endpoints.yaml");
        Files.writeString(endpoints, Files.readString(endpoints)
            .replace("port_value: " + first.port(), "port_value: " + second.port()));

        await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "second"::equals);
      }
    }
  }
}
