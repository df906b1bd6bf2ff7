package io.xdsproxy.downstream;

import static org.awaitility.Awaitility.await;

import io.xdsproxy.downstream.testing.Backend;
import io.xdsproxy.downstream.testing.XdsClientChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded default: the example resource directory shipped in deploy/ served as the upstream,
 * to grpc-java's xDS client, and an edit of a file reaching the client.
 */
class FileSystemThroughProxyTest {

  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final Path EXAMPLE = Path.of("../deploy/examples/resources");

  @TempDir
  Path resources;

  /** The shipped example, with its endpoint's port (8080) moved to {@code port}. */
  private void copyExamplePointingAt(int port) throws Exception {
    try (Stream<Path> files = Files.list(EXAMPLE)) {
      for (Path file : (Iterable<Path>) files::iterator) {
        String text = Files.readString(file).replace("port_value: 8080", "port_value: " + port);
        Path target = resources.resolve(file.getFileName());
        // Written beside and moved into place, as editors and ConfigMap updates do.
        Path temporary = Files.writeString(resources.resolve("." + file.getFileName() + ".tmp"), text);
        Files.move(temporary, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
            java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      }
    }
  }

  @Test
  void theShippedExampleReachesAGrpcClientAndAFileEditMovesItToAnotherBackend() throws Exception {
    try (Backend first = new Backend("first"); Backend second = new Backend("second")) {
      copyExamplePointingAt(first.port());
      try (XdsProxy proxy = XdsProxy.start(ProxyConfig.DEFAULTS.withResourcesDir(resources).withPorts(0, 0));
          XdsClientChannel client = new XdsClientChannel(proxy.xdsPort(), "client-1", "local", "example-service")) {

        await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "first"::equals);

        copyExamplePointingAt(second.port());

        await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "second"::equals);
      }
    }
  }

  @Test
  void anInPlaceEditOfTheEndpointsFileIsPickedUp() throws Exception {
    try (Backend first = new Backend("first"); Backend second = new Backend("second")) {
      copyExamplePointingAt(first.port());
      try (XdsProxy proxy = XdsProxy.start(ProxyConfig.DEFAULTS.withResourcesDir(resources).withPorts(0, 0));
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
