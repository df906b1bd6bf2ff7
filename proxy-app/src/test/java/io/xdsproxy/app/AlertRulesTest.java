package io.xdsproxy.app;

import static io.xdsproxy.app.DeploymentChecks.httpGet;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static io.xdsproxy.app.testing.Yamls.cast;
import static io.xdsproxy.app.testing.Yamls.documents;
import static io.xdsproxy.app.testing.Yamls.list;
import static io.xdsproxy.app.testing.Yamls.str;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.rpc.Status;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.TlsChannelCredentials;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The alerting rules (deploy/kubernetes/prometheusrule.yaml, which the Helm chart renders too) ask
 * for series a real proxy exports, or that the named exporters do, and each alert tells the person
 * it wakes how bad it is, what is wrong, and where its runbook is in deploy/README.md.
 */
class AlertRulesTest {

  private static final Path RULES = Path.of("..", "deploy", "kubernetes", "prometheusrule.yaml");
  private static final Path RUNBOOKS = Path.of("..", "deploy", "README.md");
  private static final Duration WAIT = DeploymentChecks.WAIT;

  /**
   * Series the rules may ask for that other exporters make: Prometheus itself, kube-state-metrics.
   */
  private static final Set<String> EXTERNAL_METRICS = Set.of("up", "kube_pod_status_ready");

  /**
   * PromQL's words that are not series: keywords, and label lists after them, are taken out first.
   */
  private static final Set<String> KEYWORDS =
      Set.of(
          "by",
          "without",
          "on",
          "ignoring",
          "group_left",
          "group_right",
          "and",
          "or",
          "unless",
          "bool",
          "offset",
          "atan2",
          "inf",
          "nan");

  private static final Pattern LABEL_LIST =
      Pattern.compile("\\b(?:by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)");
  private static final Pattern IDENTIFIER =
      Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*(?=\\s*(\\()?)");

  private static List<Map<String, Object>> rules;

  @TempDir Path dir;

  @BeforeAll
  static void readTheRules() throws Exception {
    Map<String, Object> rule = documents(Files.readString(RULES), RULES.toString()).get(0);
    assertThat(rule).containsEntry("kind", "PrometheusRule");
    rules = new ArrayList<>();
    for (Object group : list(rule, "spec", "groups")) {
      list(group, "rules").forEach(item -> rules.add(cast(item)));
    }
    assertThat(rules).as("the rules of %s", RULES).isNotEmpty();
  }

  @Test
  void everyAlertHasASeveritySummaryDescriptionAndARunbookThatIsASectionOfTheDeployReadme()
      throws Exception {
    Set<String> anchors =
        Files.readAllLines(RUNBOOKS).stream()
            .filter(line -> line.startsWith("#"))
            .map(AlertRulesTest::githubAnchor)
            .collect(Collectors.toCollection(TreeSet::new));
    for (Map<String, Object> rule : rules) {
      String alert = str(rule, "alert");
      assertThat(alert).as("an alert's name").matches("XdsProxy[A-Za-z]+");
      assertThat(str(rule, "labels", "severity"))
          .as("%s's severity", alert)
          .isIn("warning", "critical");
      assertThat(str(rule, "annotations", "summary")).as("%s's summary", alert).isNotBlank();
      assertThat(str(rule, "annotations", "description"))
          .as("%s's description", alert)
          .contains("{{ $labels.");
      String runbook = str(rule, "annotations", "runbook_url");
      assertThat(runbook)
          .as("%s's runbook", alert)
          .startsWith("https://")
          .contains("/deploy/README.md#");
      String anchor = runbook.substring(runbook.indexOf('#') + 1);
      assertThat(anchor)
          .as("%s's runbook section", alert)
          .isEqualTo(alert.toLowerCase(Locale.ROOT));
      assertThat(anchors).as("the sections of %s", RUNBOOKS).contains(anchor);
    }
  }

  /**
   * The certificate expiry warns at 14 days and pages at 3, from the proxy's own expiry metric; the
   * replica readiness comes from kube-state-metrics, for pods that export the proxy's metrics.
   */
  @Test
  void theCertificateAlertsWarnAtFourteenDaysAndPageAtThree() {
    List<Map<String, Object>> expiring =
        rules.stream()
            .filter(rule -> "XdsProxyCertificateExpiring".equals(rule.get("alert")))
            .toList();
    assertThat(expiring)
        .extracting(rule -> str(rule, "labels", "severity"))
        .containsExactly("warning", "critical");
    assertThat(str(expiring.get(0), "expr"))
        .contains("xds_tls_certificate_expiration_timestamp_seconds")
        .endsWith("< 14 * 86400");
    assertThat(str(expiring.get(1), "expr"))
        .contains("xds_tls_certificate_expiration_timestamp_seconds")
        .endsWith("< 3 * 86400");
  }

  /**
   * A real proxy, serving TLS on the xDS port with a control plane upstream, after a client was
   * sent an update and NACKed it and a certificate file was replaced by one that does not load:
   * every series every rule asks for is in its scrape, but those of the exporters named above.
   */
  @Test
  void everySeriesTheRulesAskForIsOneARealProxyExports() throws Exception {
    Set<String> wanted = new TreeSet<>();
    for (Map<String, Object> rule : rules) {
      wanted.addAll(seriesOf(str(rule, "expr")));
    }
    assertThat(wanted)
        .as("series the rules ask for")
        .contains("xds_upstream_connected", "kube_pod_status_ready");
    wanted.removeAll(EXTERNAL_METRICS);

    Ca ca = TestCertificates.ca("xds", dir);
    Issued server = ca.issue("proxy");
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane();
        XdsProxy proxy =
            XdsProxy.start(
                ProxyConfig.DEFAULTS
                    .withUpstream(controlPlane.target())
                    .withPorts(0, 0, 0)
                    .withTls(ServerTls.of(server.cert(), server.key())));
        var client =
            XdsTestClient.sotwAds(
                proxy.xdsPort(),
                TlsChannelCredentials.newBuilder().trustManager(ca.pem().toFile()).build())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("envoy-1", "example"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      assertThat(controlPlane.nextRequest(WAIT)).as("the proxy's request upstream").isNotNull();
      controlPlane.send(
          DiscoveryResponse.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("1")
              .setNonce("1")
              .addResources(Any.pack(Resources.cluster("a")))
              .build());
      DiscoveryResponse clusters = client.next(WAIT);
      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setResponseNonce(clusters.getNonce())
              .setErrorDetail(Status.newBuilder().setCode(3).setMessage("rejected by the test"))
              .build());
      // What a failed renewal leaves: a certificate file the proxy cannot load.
      Files.writeString(server.cert(), "not a certificate");

      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(sampleNames(httpGet(proxy, "/metrics").body()))
                      .as("series in a scrape of the proxy")
                      .containsAll(wanted));
    }
  }

  /**
   * The series a PromQL expression selects: its identifiers, less functions, keywords and label
   * names.
   */
  static Set<String> seriesOf(String expr) {
    String bare =
        expr.replaceAll("\"(?:[^\"\\\\]|\\\\.)*\"", "\"\"")
            .replaceAll("\\{[^}]*}", "")
            .replaceAll("\\[[^]]*]", "");
    bare = LABEL_LIST.matcher(bare).replaceAll(" ");
    Set<String> series = new TreeSet<>();
    Matcher identifier = IDENTIFIER.matcher(bare);
    while (identifier.find()) {
      boolean function = identifier.group(1) != null;
      boolean number =
          identifier.start() > 0 && Character.isDigit(bare.charAt(identifier.start() - 1));
      if (!function && !number && !KEYWORDS.contains(identifier.group().toLowerCase(Locale.ROOT))) {
        series.add(identifier.group());
      }
    }
    return series;
  }

  /** The names of the samples of a Prometheus text exposition. */
  private static Set<String> sampleNames(String exposition) {
    return exposition
        .lines()
        .filter(line -> !line.startsWith("#") && !line.isBlank())
        .map(line -> line.split("[{ ]", 2)[0])
        .collect(Collectors.toCollection(TreeSet::new));
  }

  /**
   * The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces as hyphens.
   */
  private static String githubAnchor(String heading) {
    return heading
        .replaceFirst("^#+\\s*", "")
        .strip()
        .toLowerCase(Locale.ROOT)
        .replaceAll("[^a-z0-9 _-]", "")
        .replace(' ', '-');
  }
}
