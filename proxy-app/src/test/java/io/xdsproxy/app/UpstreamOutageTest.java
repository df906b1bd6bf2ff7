package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.xdsproxy.app.testing.Backend;
import io.xdsproxy.app.testing.ControlPlaneCell;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsClientChannel;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.time.Duration;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Invariant 4 with real peers: the control plane (one of each kind, SotW or Delta) dies while
 * grpc-java xDS clients are connected; they keep working, a client that arrives meanwhile is served
 * the last good state, and when the control plane comes back with new state every client follows.
 */
class UpstreamOutageTest {

  private static final Duration WAIT = Duration.ofSeconds(20);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void clientsOutliveTheControlPlaneAndConvergeWhenItReturns(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    Backend first = fixture.add(new Backend("first"));
    Backend second = fixture.add(new Backend("second"));
    XdsProxy proxy = fixture.proxy(against(cell, controlPlane));
    controlPlane.setSnapshot("fleet", Resources.greeterAt(first.port(), "1"));
    try (XdsClientChannel early =
        new XdsClientChannel(proxy.xdsPort(), "early", "fleet", "greeter")) {
      await().atMost(WAIT).ignoreExceptions().until(early::whoAmI, "first"::equals);

      controlPlane.stop();

      assertThat(early.whoAmI()).as("an open stream keeps its configuration").isEqualTo("first");
      try (XdsClientChannel meanwhile =
          new XdsClientChannel(proxy.xdsPort(), "meanwhile", "fleet", "greeter")) {
        await().atMost(WAIT).ignoreExceptions().until(meanwhile::whoAmI, "first"::equals);

        controlPlane.setSnapshot("fleet", Resources.greeterAt(second.port(), "2"));
        controlPlane.start();

        await().atMost(WAIT).ignoreExceptions().until(early::whoAmI, "second"::equals);
        await().atMost(WAIT).ignoreExceptions().until(meanwhile::whoAmI, "second"::equals);
      }
    }
  }
}
