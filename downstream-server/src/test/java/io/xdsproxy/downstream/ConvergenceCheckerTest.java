package io.xdsproxy.downstream;

import static io.xdsproxy.downstream.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.testing.ConvergenceChecker;
import io.xdsproxy.downstream.testing.Resources;
import io.xdsproxy.downstream.testing.VariantClient;
import io.xdsproxy.downstream.testing.VariantClient.Variant;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The convergence checker the fault tests end with: it passes on clients that caught up and names those that did not. */
class ConvergenceCheckerTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  private static Snapshot clusters(String version, int timeout, String... names) {
    List<Cluster> cds = java.util.Arrays.stream(names).map(name -> Resources.cluster(name).toBuilder()
        .setConnectTimeout(com.google.protobuf.Duration.newBuilder().setSeconds(timeout)).build()).toList();
    return Snapshot.create(cds, List.of(), List.of(), List.of(), List.of(), version);
  }

  @Test
  void aClientThatRejectedTheLatestStateFailsTheCheckNamingWhatItLacks() throws Exception {
    try (ControlPlane controlPlane = new ControlPlane();
        XdsProxy proxy = XdsProxy.start(ProxyConfig.DEFAULTS.withUpstream(controlPlane.target()).withPorts(0, 0));
        VariantClient current = new VariantClient(Variant.SOTW_ADS, proxy.xdsPort(), node("current", "fleet"));
        VariantClient behind = new VariantClient(Variant.DELTA_ADS, proxy.xdsPort(), node("behind", "fleet"))) {
      Snapshot first = clusters("1", 1, "a", "b", "old");
      controlPlane.setSnapshot("fleet", first);
      current.subscribe(TypeUrl.CLUSTER);
      behind.subscribe(TypeUrl.CLUSTER, "a", "b", "c");
      new ConvergenceChecker().upstream("fleet", first).client(current).client(behind).awaitConverged(WAIT);

      Snapshot second = clusters("2", 2, "a", "c");
      behind.rejectNext(TypeUrl.CLUSTER);
      controlPlane.setSnapshot("fleet", second);

      ConvergenceChecker checker = new ConvergenceChecker().upstream("fleet", second).client(current).client(behind);
      assertThatThrownBy(() -> checker.awaitConverged(Duration.ofSeconds(2)))
          .isInstanceOf(AssertionError.class)
          .hasMessageContaining("1 of 2 clients did not converge")
          .hasMessageContaining("client behind (group fleet, DELTA_ADS)")
          // The proxy sent the additions and the removal of b apart (make-before-break); only the first was rejected.
          .hasMessageContaining("Cluster (names [a, b, c]): holds 1, upstream has 2; missing [c]; stale [a (held at version")
          .hasMessageContaining("exchanged on the stream of envoy.config.cluster.v3.Cluster")
          .hasMessageNotContaining("client current");
      assertThat(checker.differences()).extracting(d -> d.client().node().getId()).containsExactly("behind");
    }
  }
}
