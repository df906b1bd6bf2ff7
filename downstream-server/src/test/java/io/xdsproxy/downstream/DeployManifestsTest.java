package io.xdsproxy.downstream;

import static io.xdsproxy.downstream.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.rpc.Status;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.cluster.v3.ClusterDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.testing.XdsTestClient;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.io.IOException;
import java.io.Reader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

/**
 * deploy/ against the program: the Kubernetes manifests, the Dockerfile and the Grafana dashboard
 * name the ports, paths, config keys, user and metrics that the proxy actually serves and accepts.
 * The ConfigMap's config file is parsed as {@code --config} is and started as a real proxy, whose
 * probes and metrics are then asked for over HTTP.
 */
class DeployManifestsTest {

  private static final Path DEPLOY = Path.of("..", "deploy");
  private static final Path KUBERNETES = DEPLOY.resolve("kubernetes");
  /** prometheus-adapter's rules: Helm values for the adapter's own release, not a manifest of ours. */
  private static final Path ADAPTER_VALUES = DEPLOY.resolve("prometheus-adapter/values.yaml");
  private static final Path SCALING_GUIDE = DEPLOY.resolve("SCALING.md");
  private static final Duration WAIT = Duration.ofSeconds(15);
  private static final String APP = "xds-proxy";

  /**
   * Every metric the proxy exports and the dashboard may query, by Prometheus name (a histogram or
   * timer by its base name, without {@code _bucket}, {@code _sum}, {@code _count}, {@code _max}).
   * MetricsTest checks the values they should have in a real scrape after real traffic; which of
   * them a scrape of the ConfigMap's proxy must show is said below, in one place.
   */
  static final List<String> METRICS = List.of(
      "xds_downstream_streams",
      "xds_downstream_requests_total",
      "xds_downstream_acks_total",
      "xds_downstream_nacks_total",
      "xds_downstream_responses_total",
      "xds_downstream_sent_bytes_total",
      "xds_fanout_latency_seconds",
      "xds_upstream_connected",
      "xds_upstream_reconnects_total",
      "xds_upstream_nacks_total",
      "xds_store_resources",
      "xds_store_bytes",
      "xds_node_groups",
      "xds_do_not_cache_relays_total",
      "xds_ttl_expiries_total",
      "xds_downstream_limited_total",
      "xds_downstream_streams_ended_total",
      "xds_proxy_build_info",
      "xds_tls_certificate_expiration_timestamp_seconds",
      "xds_tls_reload_failures_total",
      "executor_queued_tasks",
      "executor_active_threads",
      "executor_pool_size_threads",
      "netty_direct_memory_used_bytes",
      "netty_direct_memory_max_bytes",
      "jvm_memory_used_bytes",
      "jvm_gc_pause_seconds",
      "process_cpu_usage",
      "process_files_open_files",
      "jvm_threads_live_threads");
  private static final Set<String> HISTOGRAMS = Set.of("xds_fanout_latency_seconds", "jvm_gc_pause_seconds");

  /**
   * The names of {@link #METRICS} a scrape shows once one client has been served from a resources
   * directory (one type ACKed, one NACKed). A meter of METRICS that is added to the proxy gets its
   * name added here, or to {@link #SCRAPED_WITH_AN_UPSTREAM} if only an upstream makes it. Not here:
   * the fan-out latency (only an update after a client subscribed makes one), do_not_cache relays
   * and TTL expiries (only such resources make them), and streams limited (only a client past a
   * limit makes one); MetricsTest, and LimitsTest for the last, scrape each with its value. Nor the
   * TLS meters, exported only for the TLS files configured (TlsTest scrapes them).
   */
  private static final List<String> SCRAPED_AFTER_ONE_CLIENT = List.of(
      "xds_downstream_streams",
      "xds_downstream_streams_ended_total",
      "xds_proxy_build_info",
      "executor_queued_tasks",
      "executor_active_threads",
      "executor_pool_size_threads",
      "netty_direct_memory_used_bytes",
      "netty_direct_memory_max_bytes",
      "xds_downstream_requests_total",
      "xds_downstream_acks_total",
      "xds_downstream_nacks_total",
      "xds_downstream_responses_total",
      "xds_downstream_sent_bytes_total",
      "xds_store_resources",
      "xds_store_bytes",
      "xds_node_groups",
      "jvm_memory_used_bytes",
      "jvm_gc_pause_seconds",
      "process_cpu_usage",
      "process_files_open_files",
      "jvm_threads_live_threads");
  /** The further names a scrape shows once a client's group has a session with a control plane. */
  private static final List<String> SCRAPED_WITH_AN_UPSTREAM = List.of(
      "xds_upstream_connected",
      "xds_upstream_reconnects_total",
      "xds_upstream_nacks_total");

  private static final Pattern METRIC_NAME = Pattern.compile("\\b(?:xds|jvm|process|executor|netty)_[a-z0-9_]+");

  /** Every object of every file under deploy/kubernetes, with the file it came from. */
  private static final List<Manifest> manifests = new ArrayList<>();

  private record Manifest(Path file, Map<String, Object> object) {
    String kind() {
      return (String) object.get("kind");
    }

    String name() {
      return str(object, "metadata", "name");
    }
  }

  @TempDir
  Path dir;

  @BeforeAll
  static void readEveryManifest() throws IOException {
    List<Path> files;
    try (Stream<Path> list = Files.list(KUBERNETES)) {
      files = list.sorted().toList();
    }
    assertThat(files).as("files under %s", KUBERNETES).isNotEmpty();
    for (Path file : files) {
      assertThat(file.getFileName().toString()).as("every file under deploy/kubernetes is YAML").endsWith(".yaml");
      try (Reader reader = Files.newBufferedReader(file)) {
        for (Object document : new Yaml().loadAll(reader)) {
          if (document != null) {
            assertThat(document).as("a document of %s", file).isInstanceOf(Map.class);
            manifests.add(new Manifest(file, cast(document)));
          }
        }
      }
    }
  }

  @Test
  void everyManifestIsAKubernetesObjectWithoutANamespaceListedInTheKustomization() throws IOException {
    Map<String, String> apiVersions = new LinkedHashMap<>();
    for (Manifest manifest : manifests) {
      Map<String, Object> object = manifest.object();
      assertThat(object).as("%s", manifest.file()).containsKeys("apiVersion", "kind");
      apiVersions.put(manifest.kind(), (String) object.get("apiVersion"));
      if (manifest.kind().equals("Kustomization")) {
        continue;
      }
      assertThat(manifest.name()).as("%s: metadata.name", manifest.file()).isNotBlank();
      assertThat(map(object, "metadata")).as("%s: the namespace is the one applied to", manifest.file())
          .doesNotContainKey("namespace");
      assertThat(map(object, "metadata", "labels")).as("%s: labels", manifest.file())
          .containsEntry("app.kubernetes.io/name", APP)
          .containsKey("app.kubernetes.io/instance");
    }
    assertThat(apiVersions).containsAllEntriesOf(Map.of(
        "ConfigMap", "v1",
        "Deployment", "apps/v1",
        "Service", "v1",
        "HorizontalPodAutoscaler", "autoscaling/v2",
        "PodDisruptionBudget", "policy/v1",
        "ServiceMonitor", "monitoring.coreos.com/v1",
        "Kustomization", "kustomize.config.k8s.io/v1beta1"));

    Set<String> otherFiles;
    try (Stream<Path> list = Files.list(KUBERNETES)) {
      otherFiles = list.map(file -> file.getFileName().toString())
          .filter(name -> !name.equals("kustomization.yaml"))
          .collect(Collectors.toCollection(TreeSet::new));
    }
    assertThat(strings(one("Kustomization").object(), "resources")).as("the kustomization's resources")
        .containsExactlyInAnyOrderElementsOf(otherFiles);
  }

  @Test
  void theConfigMapsConfigStartsARealProxyThatAnswersTheProbesAndServesTheMetrics() throws Exception {
    ProxyConfig config = configMapConfig();
    Map<String, Object> container = container();
    Map<String, Object> pod = map(one("Deployment").object(), "spec", "template");

    try (XdsProxy proxy = XdsProxy.start(config.withUpstream().withResourcesDir(DEPLOY.resolve("examples/resources"))
        .withPorts(0, 0, 0))) {
      for (String probe : List.of("livenessProbe", "readinessProbe", "startupProbe")) {
        if (container.containsKey(probe)) {
          String path = str(container, probe, "httpGet", "path");
          await().atMost(WAIT).untilAsserted(() -> assertThat(get(proxy, path).statusCode()).as("GET %s", path).isEqualTo(200));
        }
      }
      String metricsPath = str(pod, "metadata", "annotations", "prometheus.io/path");
      HttpResponse<String> metrics = get(proxy, metricsPath);
      assertThat(metrics.statusCode()).as("GET %s", metricsPath).isEqualTo(200);
      assertThat(metrics.body()).contains("xds_");

      serveOneClient(proxy);
      // A collection, so that the GC pause timer has had a pause to record.
      System.gc();
      await().atMost(WAIT).untilAsserted(() -> assertThat(scrapedNames(get(proxy, metricsPath).body()))
          .containsAll(SCRAPED_AFTER_ONE_CLIENT));
    }
  }

  @Test
  void theConfigMapsUpstreamSettingsOpenARealUpstreamSessionAndItsMetrics() throws Exception {
    ProxyConfig config = configMapConfig();
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane();
        XdsProxy proxy = XdsProxy.start(config.withUpstream(controlPlane.target()).withPorts(0, 0, 0));
        var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(DiscoveryRequest.newBuilder().setNode(clientNode()).setTypeUrl(TypeUrl.CLUSTER.url()).build());
      if (config.upstreamProtocol() == AdsUpstream.Protocol.DELTA) {
        assertThat(controlPlane.nextDeltaRequest(WAIT)).as("the proxy's Delta request upstream").isNotNull();
      } else {
        assertThat(controlPlane.nextRequest(WAIT)).as("the proxy's SotW request upstream").isNotNull();
      }

      await().atMost(WAIT).untilAsserted(() -> assertThat(get(proxy, "/readyz").statusCode()).isEqualTo(200));
      await().atMost(WAIT).untilAsserted(() -> assertThat(scrapedNames(get(proxy, "/metrics").body()))
          .containsAll(SCRAPED_WITH_AN_UPSTREAM));
    }
  }

  @Test
  void theDeploymentsPortsProbesAnnotationsAndDrainAreTheConfigsOwn() throws Exception {
    ProxyConfig config = configMapConfig();
    Map<String, Object> deployment = one("Deployment").object();
    Map<String, Object> pod = map(deployment, "spec", "template");
    Map<String, Object> container = container();
    Map<String, Integer> ports = containerPorts();

    assertThat(ports.values()).as("container ports").containsExactlyInAnyOrder(config.xdsPort(), config.monitoringPort());
    assertThat(str(container, "livenessProbe", "httpGet", "path")).isEqualTo("/healthz");
    assertThat(str(container, "readinessProbe", "httpGet", "path")).isEqualTo("/readyz");
    for (String probe : List.of("livenessProbe", "readinessProbe", "startupProbe")) {
      if (container.containsKey(probe)) {
        assertThat(port(get(container, probe, "httpGet", "port"), ports)).as("%s's port", probe).isEqualTo(config.monitoringPort());
      }
    }

    Map<String, Object> annotations = map(pod, "metadata", "annotations");
    assertThat(annotations).containsEntry("prometheus.io/scrape", "true")
        .containsEntry("prometheus.io/port", String.valueOf(config.monitoringPort()))
        .containsEntry("prometheus.io/path", "/metrics");

    // The proxy reads its config file where the ConfigMap is mounted.
    String configKey = configMapKey();
    String configPath = configArgument();
    Map<String, Object> mount = null;
    for (Object item : list(container, "volumeMounts")) {
      Map<String, Object> candidate = cast(item);
      String mountPath = (String) candidate.get("mountPath");
      String file = candidate.containsKey("subPath") ? mountPath : mountPath + "/" + configKey;
      if (file.equals(configPath)) {
        mount = candidate;
      }
    }
    assertThat(mount).as("a volume mount that puts the ConfigMap's %s at --config %s", configKey, configPath).isNotNull();
    String volumeName = (String) mount.get("name");
    Map<String, Object> volume = list(pod, "spec", "volumes").stream().map(DeployManifestsTest::cast)
        .filter(v -> volumeName.equals(v.get("name"))).findFirst().orElseThrow();
    assertThat(str(volume, "configMap", "name")).isEqualTo(one("ConfigMap").name());
    if (mount.containsKey("subPath")) {
      assertThat(mount.get("subPath")).isEqualTo(configKey);
    }

    // On SIGTERM the pod sleeps in preStop, then the proxy drains for drain-time, then exits.
    long preStopSeconds = 0;
    if (container.containsKey("lifecycle")) {
      List<String> command = strings(container, "lifecycle", "preStop", "exec", "command");
      assertThat(command).hasSize(2).first().isEqualTo("sleep");
      preStopSeconds = Long.parseLong(command.get(1));
    }
    int grace = (Integer) get(pod, "spec", "terminationGracePeriodSeconds");
    assertThat(Duration.ofSeconds(grace)).as("terminationGracePeriodSeconds against preStop %ss and drain-time %s",
        preStopSeconds, config.drainTime()).isGreaterThan(config.drainTime().plusSeconds(preStopSeconds));

    Map<String, Object> podLabels = map(pod, "metadata", "labels");
    assertThat(podLabels).containsAllEntriesOf(map(deployment, "spec", "selector", "matchLabels"));
    for (Object constraint : list(pod, "spec", "topologySpreadConstraints")) {
      assertThat(podLabels).containsAllEntriesOf(map(constraint, "labelSelector", "matchLabels"));
    }
    for (Object term : list(pod, "spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")) {
      assertThat(podLabels).containsAllEntriesOf(map(term, "podAffinityTerm", "labelSelector", "matchLabels"));
    }
    assertThat(map(container, "resources", "requests")).containsKeys("cpu", "memory");
    assertThat(map(container, "resources", "limits")).containsKey("memory");
  }

  @Test
  void theContainerRunsAsTheImagesNonRootUserOnAReadOnlyRootFilesystem() throws IOException {
    Map<String, Object> podSecurity = map(one("Deployment").object(), "spec", "template", "spec", "securityContext");
    Map<String, Object> security = map(container(), "securityContext");

    assertThat(podSecurity).containsEntry("runAsNonRoot", true);
    assertThat(podSecurity.get("runAsUser")).as("the pod's runAsUser is the image's USER")
        .isEqualTo(Integer.parseInt(dockerUser().split(":")[0]));
    assertThat(security).containsEntry("readOnlyRootFilesystem", true).containsEntry("allowPrivilegeEscalation", false);
    assertThat(strings(security, "capabilities", "drop")).contains("ALL");
  }

  @Test
  void theServiceHpaPdbAndServiceMonitorPointAtTheDeploymentsPods() throws Exception {
    ProxyConfig config = configMapConfig();
    Map<String, Object> deployment = one("Deployment").object();
    Map<String, Object> podLabels = map(deployment, "spec", "template", "metadata", "labels");
    Map<String, Integer> ports = containerPorts();

    Map<String, Object> service = one("Service").object();
    assertThat(podLabels).as("pods the Service selects").containsAllEntriesOf(map(service, "spec", "selector"));
    Map<String, Integer> servicePorts = new LinkedHashMap<>();
    for (Object item : list(service, "spec", "ports")) {
      Map<String, Object> servicePort = cast(item);
      int target = port(servicePort.get("targetPort"), ports);
      assertThat(ports.values()).as("Service port %s's targetPort", servicePort.get("name")).contains(target);
      servicePorts.put((String) servicePort.get("name"), target);
      if (target == config.xdsPort()) {
        assertThat(servicePort).as("the xDS port").containsEntry("appProtocol", "grpc");
      }
    }
    assertThat(servicePorts.values()).containsExactlyInAnyOrder(config.xdsPort(), config.monitoringPort());

    Map<String, Object> monitor = one("ServiceMonitor").object();
    assertThat(map(service, "metadata", "labels")).as("the Service the ServiceMonitor selects")
        .containsAllEntriesOf(map(monitor, "spec", "selector", "matchLabels"));
    for (Object item : list(monitor, "spec", "endpoints")) {
      Map<String, Object> endpoint = cast(item);
      assertThat(servicePorts).as("the Service's ports by name").containsKey((String) endpoint.get("port"));
      assertThat(servicePorts.get(endpoint.get("port"))).as("the scraped port").isEqualTo(config.monitoringPort());
      assertThat(endpoint).containsEntry("path", "/metrics");
    }

    Map<String, Object> hpa = one("HorizontalPodAutoscaler").object();
    assertThat(map(hpa, "spec", "scaleTargetRef")).containsEntry("apiVersion", "apps/v1")
        .containsEntry("kind", "Deployment").containsEntry("name", one("Deployment").name());
    assertThat((Integer) get(hpa, "spec", "minReplicas")).isGreaterThanOrEqualTo(2)
        .isLessThanOrEqualTo((Integer) get(deployment, "spec", "replicas"));

    Map<String, Object> pdb = one("PodDisruptionBudget").object();
    assertThat(podLabels).as("pods the PodDisruptionBudget selects").containsAllEntriesOf(map(pdb, "spec", "selector", "matchLabels"));
    assertThat(map(pdb, "spec")).containsEntry("maxUnavailable", 1);

    // Comments name metrics too (the HPA's Pods metric): they must be ones the proxy exports.
    for (Manifest manifest : manifests) {
      assertThat(metricNames(Files.readString(manifest.file()))).as("metrics named in %s", manifest.file())
          .isSubsetOf(METRICS);
    }
  }

  /**
   * The autoscaler's Pods metrics as the custom metrics API would serve them: prometheus-adapter's
   * rule maps the name to a series the proxy exports, and its query, a sum per pod over the series'
   * own labels, run over a real scrape, is the number of streams the proxy has open, whatever their
   * variant and service.
   */
  @Test
  void theAutoscalersPodsMetricIsTheAdapterRulesSumPerPodOfTheProxysOpenStreams() throws Exception {
    Map<String, Object> hpa = one("HorizontalPodAutoscaler").object();
    List<String> podsMetrics = new ArrayList<>();
    for (Object item : list(hpa, "spec", "metrics")) {
      Map<String, Object> metric = cast(item);
      if (metric.get("type").equals("Pods")) {
        assertThat(str(metric, "pods", "target", "type")).as("the Pods metric's target").isEqualTo("AverageValue");
        assertThat(averageValue(metric)).as("the Pods metric's target per pod").isPositive();
        podsMetrics.add(str(metric, "pods", "metric", "name"));
      } else {
        // A utilization is a share of what the container requests: no request, no utilization.
        assertThat(metric.get("type")).as("the autoscaler's other metrics").isEqualTo("Resource");
        String resource = str(metric, "resource", "name");
        if (str(metric, "resource", "target", "type").equals("Utilization")) {
          assertThat(map(container(), "resources", "requests")).as("what a %s utilization is a share of", resource)
              .containsKey(resource);
        }
      }
    }
    assertThat(podsMetrics).as("the autoscaler's Pods metrics").isNotEmpty();

    Map<String, String> seriesByMetric = new LinkedHashMap<>();
    for (String metric : podsMetrics) {
      Map<String, Object> rule = adapterRuleServing(metric);
      String seriesQuery = str(rule, "seriesQuery");
      String series = seriesQuery.split("\\{", 2)[0].strip();
      assertThat(METRICS).as("the series of the adapter rule serving %s (%s)", metric, ADAPTER_VALUES).contains(series);
      Map<String, Object> overrides = map(rule, "resources", "overrides");
      Map<String, String> resources = new LinkedHashMap<>();
      overrides.forEach((label, to) -> resources.put(str(to, "resource").replaceAll("s$", ""), label));
      assertThat(resources).as("labels the rule ties to Kubernetes resources").containsKeys("namespace", "pod");
      for (String label : resources.values()) {
        assertThat(seriesQuery).as("the rule's series query asks for series with a %s label", label).contains(label + "!=\"\"");
      }
      assertThat(str(rule, "metricsQuery").replace(" ", ""))
          .as("the rule's query: the series summed over its own labels, per pod (a gauge: no rate)")
          .isEqualTo("sum(<<.Series>>{<<.LabelMatchers>>})by(<<.GroupBy>>)");
      seriesByMetric.put(metric, series);
    }

    try (XdsProxy proxy = XdsProxy.start(configMapConfig().withUpstream().withResourcesDir(DEPLOY.resolve("examples/resources"))
        .withPorts(0, 0, 0))) {
      try (var sotwAds = XdsTestClient.sotwAds(proxy.xdsPort());
          var deltaAds = XdsTestClient.deltaAds(proxy.xdsPort());
          var sotwCds = new XdsTestClient<>(proxy.xdsPort(), ClusterDiscoveryServiceGrpc.getStreamClustersMethod())) {
        DiscoveryRequest clusters = DiscoveryRequest.newBuilder().setNode(clientNode()).setTypeUrl(TypeUrl.CLUSTER.url()).build();
        sotwAds.send(clusters);
        sotwCds.send(clusters);
        deltaAds.send(DeltaDiscoveryRequest.newBuilder().setNode(clientNode()).setTypeUrl(TypeUrl.CLUSTER.url()).build());
        assertThat(sotwAds.next(WAIT)).as("SotW ADS: %s", sotwAds.transcript()).isNotNull();
        assertThat(sotwCds.next(WAIT)).as("SotW CDS: %s", sotwCds.transcript()).isNotNull();
        assertThat(deltaAds.next(WAIT)).as("Delta ADS: %s", deltaAds.transcript()).isNotNull();

        for (var entry : seriesByMetric.entrySet()) {
          String body = get(proxy, "/metrics").body();
          assertThat(samples(body, entry.getValue())).as("the series of %s in a scrape of the proxy:%n%s", entry.getKey(), body)
              .hasSizeGreaterThan(1);
          await().atMost(WAIT).untilAsserted(() -> assertThat(perPod(get(proxy, "/metrics").body(), entry.getValue()))
              .as("%s of a pod with three streams open (SotW ADS, SotW CDS, Delta ADS)", entry.getKey()).isEqualTo(3));
        }
      }
      for (var entry : seriesByMetric.entrySet()) {
        await().atMost(WAIT).untilAsserted(() -> assertThat(perPod(get(proxy, "/metrics").body(), entry.getValue()))
            .as("%s once they are closed", entry.getKey()).isZero());
      }
    }
  }

  /**
   * SCALING.md derives the autoscaler's target, the memory limit and the heap's share of it; it
   * must be changed with them.
   */
  @Test
  void theScalingGuideStatesTheTargetMemoryLimitAndHeapShareTheManifestsUse() throws IOException {
    String guide = Files.readString(SCALING_GUIDE);
    for (Object item : list(one("HorizontalPodAutoscaler").object(), "spec", "metrics")) {
      Map<String, Object> metric = cast(item);
      if (metric.get("type").equals("Pods")) {
        String target = String.format(Locale.ROOT, "%,d", averageValue(metric));
        assertThat(guide.contains(target)).as("%s names the Pods metric's target, %s", SCALING_GUIDE, target).isTrue();
      }
    }
    String limit = str(container(), "resources", "limits", "memory");
    Matcher quantity = Pattern.compile("([0-9]+)([MG])i").matcher(limit);
    assertThat(quantity.matches()).as("the memory limit %s, in Mi or Gi", limit).isTrue();
    String limitInGuide = quantity.group(1) + " " + quantity.group(2) + "iB";
    assertThat(guide.contains(limitInGuide)).as("%s names the memory limit, %s", SCALING_GUIDE, limitInGuide).isTrue();
    String heapShare = dockerfile().stream().filter(instruction -> instruction[0].equals("ENTRYPOINT"))
        .map(instruction -> instruction[1]).flatMap(line -> Pattern.compile("-XX:MaxRAMPercentage=[0-9]+").matcher(line).results())
        .map(found -> found.group()).findFirst().orElseThrow();
    assertThat(guide.contains(heapShare)).as("%s names the image's heap share, %s", SCALING_GUIDE, heapShare).isTrue();
  }

  @Test
  void theDashboardQueriesOnlyExportedMetricsAndShowsEveryOne() throws IOException {
    JsonObject dashboard = JsonParser.parseString(Files.readString(DEPLOY.resolve("grafana/xds-proxy-dashboard.json")))
        .getAsJsonObject();
    assertThat(dashboard.get("schemaVersion").getAsInt()).isGreaterThanOrEqualTo(36);

    Map<String, JsonObject> variables = new LinkedHashMap<>();
    for (JsonElement variable : dashboard.getAsJsonObject("templating").getAsJsonArray("list")) {
      variables.put(variable.getAsJsonObject().get("name").getAsString(), variable.getAsJsonObject());
    }
    assertThat(variables).containsKeys("datasource", "job", "pod");
    assertThat(variables.get("datasource").get("type").getAsString()).isEqualTo("datasource");
    assertThat(variables.get("datasource").get("query").getAsString()).isEqualTo("prometheus");

    List<JsonObject> panels = new ArrayList<>();
    collectPanels(dashboard.getAsJsonArray("panels"), panels);
    Set<Integer> ids = new LinkedHashSet<>();
    Set<String> used = new TreeSet<>();
    for (JsonObject panel : panels) {
      String title = panel.get("title").getAsString();
      assertThat(ids.add(panel.get("id").getAsInt())).as("panel %s's id is unique", title).isTrue();
      if (panel.get("type").getAsString().equals("row")) {
        continue;
      }
      assertThat(panel.getAsJsonObject("datasource").get("uid").getAsString()).as("panel %s's data source", title)
          .isEqualTo("${datasource}");
      assertThat(panel.getAsJsonArray("targets")).as("panel %s's queries", title).isNotEmpty();
      for (JsonElement target : panel.getAsJsonArray("targets")) {
        String expr = target.getAsJsonObject().get("expr").getAsString();
        assertThat(expr).as("panel %s", title).contains("$job").contains("$pod");
        assertThat(metricNames(expr)).as("metrics of panel %s: %s", title, expr).isNotEmpty().isSubsetOf(METRICS);
        used.addAll(metricNames(expr));
      }
    }
    for (JsonObject variable : variables.values()) {
      if (variable.has("definition")) {
        assertThat(metricNames(variable.get("definition").getAsString())).isSubsetOf(METRICS);
      }
    }
    assertThat(used).as("the metrics the dashboard shows").containsExactlyInAnyOrderElementsOf(METRICS);
  }

  // The ConfigMap, the Deployment and the files they name.

  /**
   * The proxy's configuration as the pod starts it: the Deployment's arguments, with the ConfigMap's
   * config file written where {@code --config} points, parsed as Main parses them. A key the proxy
   * does not know fails here, naming its line.
   */
  private ProxyConfig configMapConfig() throws IOException {
    String key = configMapKey();
    String text = str(one("ConfigMap").object(), "data", key);
    Path file = Files.writeString(dir.resolve(key), text);
    List<String> args = new ArrayList<>(strings(container(), "args"));
    String configPath = configArgument();
    args.replaceAll(arg -> arg.equals(configPath) ? file.toString() : arg.equals("--config=" + configPath) ? "--config=" + file : arg);
    ProxyConfig config;
    try {
      config = ProxyConfig.parse(args.toArray(String[]::new));
    } catch (ProxyConfig.ConfigException e) {
      throw new AssertionError("the container's args " + strings(container(), "args") + " with the ConfigMap's " + key
          + " (" + one("ConfigMap").file() + ") are refused as the proxy would refuse them: " + e.getMessage(), e);
    }
    Map<String, Object> keys = cast(new Yaml().load(text));
    assertThat(keys.keySet()).as("the keys of the ConfigMap's %s", key).isSubsetOf(ProxyConfig.KEYS);
    return config;
  }

  /** The ConfigMap's one key: the config file's name. */
  private static String configMapKey() {
    Map<String, Object> data = map(one("ConfigMap").object(), "data");
    assertThat(data).as("the ConfigMap holds one config file").hasSize(1);
    return data.keySet().iterator().next();
  }

  /** The path the container is given with {@code --config}. */
  private static String configArgument() {
    List<String> args = strings(container(), "args");
    for (int i = 0; i < args.size(); i++) {
      if (args.get(i).equals("--config") && i + 1 < args.size()) {
        return args.get(i + 1);
      } else if (args.get(i).startsWith("--config=")) {
        return args.get(i).substring("--config=".length());
      }
    }
    throw new AssertionError("the container's args have no --config: " + args);
  }

  private static Map<String, Object> container() {
    List<Object> containers = list(one("Deployment").object(), "spec", "template", "spec", "containers");
    assertThat(containers).as("the Deployment's containers").hasSize(1);
    return cast(containers.get(0));
  }

  /** The container's ports, by name. */
  private static Map<String, Integer> containerPorts() {
    Map<String, Integer> ports = new LinkedHashMap<>();
    for (Object item : list(container(), "ports")) {
      Map<String, Object> port = cast(item);
      assertThat(port).as("a container port").containsKeys("name", "containerPort");
      ports.put((String) port.get("name"), (Integer) port.get("containerPort"));
    }
    return ports;
  }

  /** A probe's or Service's port, given by number or by the name of a container port. */
  private static int port(Object port, Map<String, Integer> containerPorts) {
    if (port instanceof Integer number) {
      return number;
    }
    assertThat(containerPorts).as("container ports by name").containsKey((String) port);
    return containerPorts.get(port);
  }

  private static Manifest one(String kind) {
    List<Manifest> found = manifests.stream().filter(manifest -> kind.equals(manifest.kind())).toList();
    assertThat(found).as("objects of kind %s under %s", kind, KUBERNETES).hasSize(1);
    return found.get(0);
  }

  /** A Pods metric's {@code averageValue}: a whole number, maybe with a {@code k} suffix. */
  private static long averageValue(Map<String, Object> metric) {
    Object value = get(metric, "pods", "target", "averageValue");
    Matcher quantity = Pattern.compile("([0-9]+)(k?)").matcher(String.valueOf(value));
    assertThat(quantity.matches()).as("the averageValue %s, a whole number of streams", value).isTrue();
    return Long.parseLong(quantity.group(1)) * (quantity.group(2).isEmpty() ? 1 : 1000);
  }

  /**
   * The rule of prometheus-adapter's values that serves {@code metric} in the custom metrics API:
   * its {@code name.matches} found in the series' name, expanded as {@code name.as} says (by default
   * the first capture group, or the whole match).
   */
  private static Map<String, Object> adapterRuleServing(String metric) throws IOException {
    Map<String, Object> values;
    try (Reader reader = Files.newBufferedReader(ADAPTER_VALUES)) {
      values = cast(new Yaml().load(reader));
    }
    List<String> served = new ArrayList<>();
    for (Object item : list(values, "rules", "custom")) {
      Map<String, Object> rule = cast(item);
      String series = str(rule, "seriesQuery").split("\\{", 2)[0].strip();
      Map<String, Object> name = rule.containsKey("name") ? map(rule, "name") : Map.of();
      Matcher matcher = Pattern.compile(String.valueOf(name.getOrDefault("matches", ".*"))).matcher(series);
      if (!matcher.find()) {
        served.add("nothing from " + series + " (name.matches " + name.get("matches") + " is not found in it)");
        continue;
      }
      String as = String.valueOf(name.getOrDefault("as", ""));
      if (as.isEmpty()) {
        as = matcher.groupCount() == 1 ? "$1" : "$0";
      }
      StringBuilder expanded = new StringBuilder();
      matcher.appendReplacement(expanded, as.replaceAll("\\$\\{([0-9]+)}", "\\$$1"));
      String exposed = expanded.substring(matcher.start());
      served.add(exposed + " from " + series);
      if (exposed.equals(metric)) {
        return rule;
      }
    }
    throw new AssertionError("no rule of " + ADAPTER_VALUES + " serves " + metric + "; its rules serve " + served);
  }

  // The Dockerfile.

  /** The Dockerfile's instructions, each as {keyword, arguments}, with comments and continuations undone. */
  private static List<String[]> dockerfile() throws IOException {
    List<String[]> instructions = new ArrayList<>();
    StringBuilder line = new StringBuilder();
    for (String raw : Files.readAllLines(DEPLOY.resolve("Dockerfile"))) {
      String trimmed = raw.strip();
      if (trimmed.startsWith("#") || trimmed.isEmpty()) {
        continue;
      }
      if (trimmed.endsWith("\\")) {
        line.append(trimmed, 0, trimmed.length() - 1).append(' ');
        continue;
      }
      line.append(trimmed);
      String[] parts = line.toString().split("\\s+", 2);
      instructions.add(new String[] {parts[0].toUpperCase(), parts.length > 1 ? parts[1].strip() : ""});
      line.setLength(0);
    }
    return instructions;
  }

  private static List<String> arguments(List<String[]> instructions, String keyword) {
    return instructions.stream().filter(instruction -> instruction[0].equals(keyword)).map(instruction -> instruction[1]).toList();
  }

  /** The final stage's USER. */
  private static String dockerUser() throws IOException {
    List<String> users = arguments(dockerfile(), "USER");
    assertThat(users).as("USER in the Dockerfile").isNotEmpty();
    return users.get(users.size() - 1);
  }

  // The running proxy.

  /**
   * A client, placed by most node-group rules (cluster, locality, an Istio-style id), that ACKs the
   * clusters and NACKs the endpoints it is sent.
   */
  private static void serveOneClient(XdsProxy proxy) {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(DiscoveryRequest.newBuilder().setNode(clientNode()).setTypeUrl(TypeUrl.CLUSTER.url()).build());
      DiscoveryResponse clusters = client.next(WAIT);
      client.send(DiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.CLUSTER.url())
          .setVersionInfo(clusters.getVersionInfo()).setResponseNonce(clusters.getNonce()).build());
      client.send(DiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.ENDPOINT.url()).addResourceNames("example-cluster").build());
      DiscoveryResponse endpoints = client.next(WAIT);
      assertThat(endpoints.getTypeUrl()).as("transcript:%n%s", client.transcript()).isEqualTo(TypeUrl.ENDPOINT.url());
      client.send(DiscoveryRequest.newBuilder().setTypeUrl(TypeUrl.ENDPOINT.url()).addResourceNames("example-cluster")
          .setResponseNonce(endpoints.getNonce()).setErrorDetail(Status.newBuilder().setCode(3).setMessage("rejected by the test"))
          .build());
      await().atMost(WAIT).untilAsserted(() -> assertThat(get(proxy, "/metrics").body())
          .as("the NACK counted").contains("xds_downstream_nacks_total{"));
    }
  }

  private static Node clientNode() {
    return node("sidecar~10.0.0.1~client-0.default~default.svc.cluster.local", "example").toBuilder()
        .setLocality(Locality.newBuilder().setRegion("region").setZone("zone-a").setSubZone("rack-1"))
        .build();
  }

  private static HttpResponse<String> get(XdsProxy proxy, String path) throws IOException, InterruptedException {
    return HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.monitoringPort() + path)).timeout(WAIT).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  // Metric names.

  /** The names a Prometheus text exposition has samples of, histograms and timers by their base name. */
  private static Set<String> scrapedNames(String exposition) {
    return exposition.lines().filter(line -> !line.startsWith("#") && !line.isBlank())
        .map(line -> baseName(line.split("[{ ]", 2)[0])).collect(Collectors.toCollection(TreeSet::new));
  }

  /** The values of {@code name}'s samples in a Prometheus text exposition, by their label set. */
  private static Map<String, Double> samples(String exposition, String name) {
    Map<String, Double> samples = new LinkedHashMap<>();
    Pattern sample = Pattern.compile(Pattern.quote(name) + "(\\{[^}]*})?\\s+(\\S+)");
    exposition.lines().filter(line -> !line.startsWith("#")).map(sample::matcher).filter(Matcher::matches)
        .forEach(found -> samples.put(found.group(1) == null ? "" : found.group(1), Double.parseDouble(found.group(2))));
    return samples;
  }

  /**
   * What prometheus-adapter's {@code sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)} gives
   * for the pod a scrape comes from: every sample of the series, whatever its other labels, added up.
   */
  private static long perPod(String exposition, String name) {
    return Math.round(samples(exposition, name).values().stream().mapToDouble(Double::doubleValue).sum());
  }

  /** The metric names in a PromQL expression or a text, histograms and timers by their base name. */
  private static Set<String> metricNames(String text) {
    Set<String> names = new TreeSet<>();
    Matcher matcher = METRIC_NAME.matcher(text);
    while (matcher.find()) {
      names.add(baseName(matcher.group()));
    }
    return names;
  }

  private static String baseName(String name) {
    for (String suffix : List.of("_bucket", "_sum", "_count", "_max")) {
      if (name.endsWith(suffix) && HISTOGRAMS.contains(name.substring(0, name.length() - suffix.length()))) {
        return name.substring(0, name.length() - suffix.length());
      }
    }
    return name;
  }

  private static void collectPanels(JsonArray panels, List<JsonObject> into) {
    for (JsonElement element : panels) {
      JsonObject panel = element.getAsJsonObject();
      into.add(panel);
      if (panel.has("panels")) {
        collectPanels(panel.getAsJsonArray("panels"), into);
      }
    }
  }

  // Walking parsed YAML: a missing field fails naming its path.

  private static Object get(Object node, String... path) {
    Object at = node;
    for (int i = 0; i < path.length; i++) {
      assertThat(at).as("%s is a mapping", String.join(".", Arrays.asList(path).subList(0, i))).isInstanceOf(Map.class);
      Map<String, Object> mapping = cast(at);
      assertThat(mapping).as("%s", String.join(".", Arrays.asList(path).subList(0, i + 1))).containsKey(path[i]);
      at = mapping.get(path[i]);
    }
    return at;
  }

  private static Map<String, Object> map(Object node, String... path) {
    return cast(get(node, path));
  }

  @SuppressWarnings("unchecked")
  private static List<Object> list(Object node, String... path) {
    Object found = get(node, path);
    assertThat(found).as("%s is a list", String.join(".", path)).isInstanceOf(List.class);
    return (List<Object>) found;
  }

  private static List<String> strings(Object node, String... path) {
    return list(node, path).stream().map(String::valueOf).toList();
  }

  private static String str(Object node, String... path) {
    Object found = get(node, path);
    assertThat(found).as("%s is a string", String.join(".", path)).isInstanceOf(String.class);
    return (String) found;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> cast(Object node) {
    return (Map<String, Object>) node;
  }
}
