package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonElement;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.xdsproxy.app.testing.ConvergenceChecker;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.VariantClient;
import io.xdsproxy.app.testing.VariantClient.Variant;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The convergence checker the fault tests end with: it passes on clients that caught up and names
 * those that did not.
 */
class ConvergenceCheckerTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private static Snapshot clusters(String version, int timeout, String... names) {
    List<Cluster> cds =
        java.util.Arrays.stream(names)
            .map(
                name ->
                    Resources.cluster(name).toBuilder()
                        .setConnectTimeout(
                            com.google.protobuf.Duration.newBuilder().setSeconds(timeout))
                        .build())
            .toList();
    return Snapshot.create(cds, List.of(), List.of(), List.of(), List.of(), version);
  }

  @Test
  void aClientThatRejectedTheLatestStateFailsTheCheckNamingWhatItLacks() throws Exception {
    ControlPlane controlPlane = fixture.controlPlane();
    fixture.proxy(against(controlPlane.target()));
    VariantClient current = fixture.client(Variant.SOTW_ADS, node("current", "fleet"));
    VariantClient behind = fixture.client(Variant.DELTA_ADS, node("behind", "fleet"));
    Snapshot first = clusters("1", 1, "a", "b", "old");
    controlPlane.setSnapshot("fleet", first);
    current.subscribe(TypeUrl.CLUSTER);
    behind.subscribe(TypeUrl.CLUSTER, "a", "b", "c");
    new ConvergenceChecker()
        .upstream("fleet", first)
        .client(current)
        .client(behind)
        .awaitConverged(WAIT);
    // The clients' last ACKs reach the proxy before the change: one taken after it would be
    // answered with the additions and the removal together, not the split the message below
    // describes.
    await()
        .atMost(WAIT)
        .until(
            () -> {
              Set<String> acked = ackedClusterVersions();
              return acked.size() == 1 && !acked.contains("");
            });

    Snapshot second = clusters("2", 2, "a", "c");
    behind.rejectNext(TypeUrl.CLUSTER);
    controlPlane.setSnapshot("fleet", second);

    ConvergenceChecker checker =
        new ConvergenceChecker().upstream("fleet", second).client(current).client(behind);
    assertThatThrownBy(() -> checker.awaitConverged(Duration.ofSeconds(2)))
        .isInstanceOf(AssertionError.class)
        .hasMessageContaining("1 of 2 clients did not converge")
        .hasMessageContaining("client behind (group fleet, DELTA_ADS)")
        // The proxy sent the additions and the removal of b apart (make-before-break); only the
        // first was rejected.
        .hasMessageContaining(
            "Cluster (names [a, b, c]): holds 1, upstream has 2; missing [c]; stale [a (held at version")
        .hasMessageContaining("exchanged on the stream of envoy.config.cluster.v3.Cluster")
        .hasMessageNotContaining("client current");
    assertThat(checker.differences())
        .extracting(d -> d.client().node().getId())
        .containsExactly("behind");
  }

  /** The Cluster version each open stream last ACKed, as {@code GET /clients} tells. */
  private Set<String> ackedClusterVersions() {
    Set<String> versions = new HashSet<>();
    for (JsonElement client : fixture.clients()) {
      for (JsonElement type : client.getAsJsonObject().getAsJsonArray("types")) {
        if (type.getAsJsonObject().get("typeUrl").getAsString().equals(TypeUrl.CLUSTER.url())) {
          versions.add(type.getAsJsonObject().get("ackedVersion").getAsString());
        }
      }
    }
    return versions;
  }
}
