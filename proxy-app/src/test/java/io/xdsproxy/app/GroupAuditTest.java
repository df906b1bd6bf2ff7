package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.app.testing.ControlPlaneCell;
import io.xdsproxy.app.testing.ExampleResources;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.VariantClient;
import io.xdsproxy.app.testing.VariantClient.Variant;
import io.xdsproxy.core.GroupAuditor;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.grpc.Backoff;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.slf4j.LoggerFactory;

/**
 * Issue 17 §3: a node-group key that puts nodes entitled to different configuration in one group is
 * found by the group audit within one interval. The control plane serves by {@code node.cluster}
 * while the proxy groups by a metadata field and shows the control plane the group's own node (an
 * {@code --upstream-node} template of cluster {@code checkout}), so a client of another cluster
 * joins the group and is served checkout's clusters: the unsafe aggregation key of
 * envoyproxy/xds-relay#147. (Without a template the proxy refuses such a member outright: its
 * cluster differs from the group's upstream node's, {@code TenantIsolationTest}.) Run against every
 * control plane, SotW and Delta alternating (the istiod model over Delta: istiod versions every
 * push, so versions must not count as differences).
 */
class GroupAuditTest {

  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final Duration INTERVAL = Duration.ofSeconds(1);
  private static final Backoff QUICK =
      new Backoff(Duration.ofMillis(50), Duration.ofMillis(500), 2.0, 0.2);
  private static final String GROUP = "payments";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @TempDir Path dir;

  private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

  @BeforeEach
  void captureTheAuditorsLog() {
    logged.start();
    ((Logger) LoggerFactory.getLogger(GroupAuditor.class)).addAppender(logged);
  }

  @AfterEach
  void stopCapturing() {
    ((Logger) LoggerFactory.getLogger(GroupAuditor.class)).detachAppender(logged);
  }

  /**
   * A node of cluster {@code cluster} whose metadata puts it in the proxy's group {@link #GROUP}.
   */
  private static Node node(String id, String cluster) {
    return Node.newBuilder()
        .setId(id)
        .setCluster(cluster)
        .setMetadata(
            Struct.newBuilder().putFields("team", Value.newBuilder().setStringValue(GROUP).build()))
        .build();
  }

  private XdsProxy proxy(ControlPlaneCell cell, UpstreamControlPlane controlPlane)
      throws Exception {
    Path template =
        Files.writeString(
            dir.resolve("upstream-node.yaml"),
            "id: payments-group\ncluster: checkout\nmetadata: {team: '{1}'}\n");
    ProxyConfig config =
        against(cell, controlPlane)
            .withUpstreamBackoff(QUICK)
            .withNotFoundTimeout(Duration.ofSeconds(1))
            .withNodeGroupKey(List.of("metadata:team"))
            .withGroupAuditInterval(INTERVAL);
    return fixture.proxy(config.withTenancy(config.tenancy().withUpstreamNode(template)));
  }

  /** A client that wants every cluster and the assignments of {@code clusters}, as Envoy does. */
  private VariantClient client(Node node, String... clusters) {
    VariantClient client = fixture.client(Variant.SOTW_ADS, node);
    client.subscribe(TypeUrl.CLUSTER);
    client.subscribe(TypeUrl.ENDPOINT, clusters);
    client.awaitHeld(TypeUrl.CLUSTER, WAIT, held -> !held.isEmpty());
    return client;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void aMemberServedOtherClustersUpstreamIsFoundWithinOneInterval(ControlPlaneCell cell)
      throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    controlPlane.setSnapshot("checkout", ControlPlaneMatrixTest.fleet("1", 1, "ledger", "cards"));
    // The other cluster's nodes are entitled to other clusters, and to another "ledger".
    controlPlane.setSnapshot("refunds", ControlPlaneMatrixTest.fleet("1", 2, "ledger", "wallet"));
    proxy(cell, controlPlane);
    client(node("refunds-1", "refunds"), "ledger", "cards");

    await()
        .atMost(INTERVAL.plus(WAIT))
        .untilAsserted(
            () ->
                assertThat(counter(fixture.scrape(), "xds_group_audit_mismatches_total", GROUP))
                    .as("audits of group %s that found a mismatch", GROUP)
                    .isGreaterThanOrEqualTo(1));
    // An audit may match before the group holds what it compares (nothing to compare yet); once it
    // does, every audit of the member finds the mismatch.
    assertThat(fixture.scrape()).contains("xds_group_audits_total{result=\"mismatch\"}");

    JsonObject audit = audit(GROUP);
    assertThat(audit.get("node_id").getAsString()).isEqualTo("refunds-1");
    assertThat(audit.get("result").getAsString()).isEqualTo("mismatch");
    List<String> clusters = new ArrayList<>();
    for (JsonElement difference : audit.getAsJsonArray("differences")) {
      JsonObject one = difference.getAsJsonObject();
      if (one.get("type_url").getAsString().equals(TypeUrl.CLUSTER.url())) {
        clusters.add(one.get("name").getAsString() + " " + one.get("difference").getAsString());
      }
    }
    assertThat(clusters)
        .as("the clusters that differ, in %s", audit)
        .containsExactlyInAnyOrder("cards only_in_group", "ledger content", "wallet only_for_node");

    // The audit asked as the member itself, on streams of its own that it closed, one at a time.
    await()
        .atMost(WAIT)
        .untilAsserted(
            () ->
                assertThat(
                        count(controlPlane.streamNodeIds(), "refunds-1")
                            - count(controlPlane.openStreamNodeIds(), "refunds-1"))
                    .as("audit streams closed")
                    .isGreaterThanOrEqualTo(2));
    assertThat(count(controlPlane.openStreamNodeIds(), "refunds-1")).isLessThanOrEqualTo(1);
    assertThat(count(controlPlane.streamNodeIds(), "payments-group"))
        .as("the group's own session, as the template's node")
        .isEqualTo(1);

    assertThat(logged.list)
        .as("the log lines of the audit")
        .anySatisfy(
            line ->
                assertThat(line.getFormattedMessage())
                    .contains("node 'refunds-1'")
                    .contains("Cluster")
                    .contains("only_in_group [cards]")
                    .contains("only_for_node [wallet]")
                    .contains("content [ledger]"));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource(ControlPlaneCell.REPRESENTATIVE)
  void membersEntitledToTheSameConfigurationMatch(ControlPlaneCell cell) throws Exception {
    UpstreamControlPlane controlPlane = fixture.controlPlane(cell);
    controlPlane.setSnapshot("checkout", ControlPlaneMatrixTest.fleet("1", 1, "ledger", "cards"));
    controlPlane.setSnapshot("refunds", ControlPlaneMatrixTest.fleet("2", 1, "ledger", "cards"));
    proxy(cell, controlPlane);
    client(node("checkout-1", "checkout"), "ledger", "cards");
    client(node("refunds-1", "refunds"), "ledger", "cards");

    await()
        .atMost(INTERVAL.plus(WAIT))
        .untilAsserted(
            () ->
                assertThat(counter(fixture.scrape(), "xds_group_audits_total", "match"))
                    .isGreaterThanOrEqualTo(2));
    String metrics = fixture.scrape();
    assertThat(counter(metrics, "xds_group_audits_total", "mismatch")).isZero();
    assertThat(counter(metrics, "xds_group_audit_mismatches_total", GROUP)).isZero();
    JsonObject audit = audit(GROUP);
    assertThat(audit.get("node_id").getAsString()).isIn("checkout-1", "refunds-1");
    assertThat(audit.get("result").getAsString()).isEqualTo("match");
    assertThat(audit.getAsJsonArray("differences")).isEmpty();
  }

  @Test
  void aDirectoryIsNotAuditedAndTheProxySaysSo() throws Exception {
    ListAppender<ILoggingEvent> proxyLog = new ListAppender<>();
    proxyLog.start();
    Logger logger = (Logger) LoggerFactory.getLogger(XdsProxy.class);
    logger.addAppender(proxyLog);
    try {
      fixture.proxy(
          ProxyFixture.serving(ExampleResources.DIRECTORY).withGroupAuditInterval(INTERVAL));
    } finally {
      logger.detachAppender(proxyLog);
    }
    assertThat(proxyLog.list)
        .anySatisfy(
            line ->
                assertThat(line.getFormattedMessage())
                    .contains("--group-audit-interval is ignored"));
    assertThat(fixture.scrape()).doesNotContain("xds_group_audits_total");
    assertThat(fixture.get("/config_dump").body()).doesNotContain("\"audit\"");
  }

  private static long count(List<String> ids, String id) {
    return ids.stream().filter(id::equals).count();
  }

  /** The last audit of {@code group} in {@code /config_dump}. */
  private JsonObject audit(String group) {
    JsonArray groups =
        JsonParser.parseString(fixture.get("/config_dump").body())
            .getAsJsonObject()
            .getAsJsonArray("groups");
    for (JsonElement each : groups) {
      JsonObject one = each.getAsJsonObject();
      if (one.get("group").getAsString().equals(group)) {
        assertThat(one.get("audit").isJsonObject()).as("group %s's audit: %s", group, one).isTrue();
        return one.getAsJsonObject("audit");
      }
    }
    throw new AssertionError("no group " + group + " in /config_dump: " + groups);
  }

  /** The value of {@code name}'s one-label series whose label value is {@code label}; 0 if none. */
  private static double counter(String metrics, String name, String label) {
    Matcher value =
        Pattern.compile(
                "(?m)^" + name + "\\{[a-z]+=\"" + Pattern.quote(label) + "\",?\\} ([0-9.E]+)$")
            .matcher(metrics);
    return value.find() ? Double.parseDouble(value.group(1)) : 0;
  }
}
