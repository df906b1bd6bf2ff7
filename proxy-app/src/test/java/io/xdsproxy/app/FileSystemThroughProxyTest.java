package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.serving;
import static org.awaitility.Awaitility.await;

import io.xdsproxy.app.testing.Backend;
import io.xdsproxy.app.testing.ExampleResources;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.XdsClientChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The embedded default: the example resource directory shipped in deploy/ served as the upstream,
 * to grpc-java's xDS client, and an edit of a file reaching the client.
 */
class FileSystemThroughProxyTest {

  private static final Duration WAIT = Duration.ofSeconds(15);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @TempDir Path resources;

  private Backend first;
  private Backend second;
  private XdsClientChannel client;

  /** The shipped example, its endpoint the backend "first", served to grpc-java's xDS client. */
  @BeforeEach
  void start() throws Exception {
    first = fixture.add(new Backend("first"));
    second = fixture.add(new Backend("second"));
    ExampleResources.copyPointingAt(resources, first.port());
    fixture.proxy(serving(resources));
    client = fixture.grpcClient("client-1", "local", "example-service");
  }

  @Test
  void theShippedExampleReachesAGrpcClientAndAFileEditMovesItToAnotherBackend() throws Exception {
    await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "first"::equals);

    ExampleResources.copyPointingAt(resources, second.port());

    await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "second"::equals);
  }

  @Test
  void anInPlaceEditOfTheEndpointsFileIsPickedUp() throws Exception {
    await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "first"::equals);

    Path endpoints = resources.resolve("endpoints.yaml");
    Files.writeString(
        endpoints,
        Files.readString(endpoints)
            .replace("port_value: " + first.port(), "port_value: " + second.port()));

    await().atMost(WAIT).ignoreExceptions().until(client::whoAmI, "second"::equals);
  }
}
