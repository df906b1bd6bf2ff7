package io.xdsproxy.app;

import static io.xdsproxy.app.DeploymentChecks.httpGet;
import static io.xdsproxy.app.testing.Yamls.cast;
import static io.xdsproxy.app.testing.Yamls.documents;
import static io.xdsproxy.app.testing.Yamls.get;
import static io.xdsproxy.app.testing.Yamls.list;
import static io.xdsproxy.app.testing.Yamls.map;
import static io.xdsproxy.app.testing.Yamls.str;
import static io.xdsproxy.app.testing.Yamls.strings;
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
import io.grpc.ChannelCredentials;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.app.testing.Yamls;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.grpc.AdsUpstream;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import java.io.IOException;
import java.io.Reader;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
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

  /** Optional kustomize Components: each a directory, applied by an operator's overlay. */
  private static final Path COMPONENTS = KUBERNETES.resolve("components");

  /**
   * prometheus-adapter's rules: Helm values for the adapter's own release, not a manifest of ours.
   */
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
  static final List<String> METRICS =
      List.of(
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
          "xds_upstream_sessions_waiting",
          "xds_upstream_session_start_wait_seconds",
          "xds_store_resources",
          "xds_store_bytes",
          "xds_node_groups",
          "xds_do_not_cache_relays_total",
          "xds_ttl_expiries_total",
          "xds_group_audits_total",
          "xds_group_audit_mismatches_total",
          "xds_downstream_limited_total",
          "xds_downstream_streams_ended_total",
          "xds_proxy_build_info",
          "xds_proxy_tls_provider",
          "xds_tls_certificate_expiration_timestamp_seconds",
          "xds_tls_reload_failures_total",
          "xds_state_writes_total",
          "xds_state_write_failures_total",
          "xds_state_load_failures_total",
          "executor_queued_tasks",
          "executor_active_threads",
          "executor_pool_size_threads",
          "xds_worker_queued_tasks",
          "netty_direct_memory_used_bytes",
          "netty_direct_memory_max_bytes",
          "jvm_memory_used_bytes",
          "jvm_gc_pause_seconds",
          "process_cpu_usage",
          "process_files_open_files",
          "jvm_threads_live_threads");

  private static final Set<String> HISTOGRAMS =
      Set.of(
          "xds_fanout_latency_seconds",
          "xds_upstream_session_start_wait_seconds",
          "jvm_gc_pause_seconds");

  /**
   * The names of {@link #METRICS} a scrape shows once one client has been served from a resources
   * directory (one type ACKed, one NACKed). A meter of METRICS that is added to the proxy gets its
   * name added here, or to {@link #SCRAPED_WITH_AN_UPSTREAM} if only an upstream makes it. Not
   * here: the fan-out latency (only an update after a client subscribed makes one), do_not_cache
   * relays and TTL expiries (only such resources make them), and streams limited (only a client
   * past a limit makes one); MetricsTest, and LimitsTest for the last, scrape each with its value.
   * Nor the TLS meters, exported only for the TLS files configured (TlsTest scrapes them), nor the
   * group audit's, exported only with {@code --group-audit-interval} (GroupAuditTest scrapes them).
   */
  private static final List<String> SCRAPED_AFTER_ONE_CLIENT =
      List.of(
          "xds_downstream_streams",
          "xds_downstream_streams_ended_total",
          "xds_proxy_build_info",
          "executor_queued_tasks",
          "executor_active_threads",
          "executor_pool_size_threads",
          "xds_worker_queued_tasks",
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
          // The kustomization's config sets --state-dir.
          "xds_state_writes_total",
          "xds_state_write_failures_total",
          "xds_state_load_failures_total",
          "jvm_memory_used_bytes",
          "jvm_gc_pause_seconds",
          "process_cpu_usage",
          "process_files_open_files",
          "jvm_threads_live_threads");

  /** The further names a scrape shows once a client's group has a session with a control plane. */
  private static final List<String> SCRAPED_WITH_AN_UPSTREAM =
      List.of(
          "xds_upstream_connected",
          "xds_upstream_reconnects_total",
          "xds_upstream_nacks_total",
          "xds_upstream_sessions_waiting",
          "xds_upstream_session_start_wait_seconds");

  private static final Pattern METRIC_NAME =
      Pattern.compile("\\b(?:xds|jvm|process|executor|netty)_[a-z0-9_]+");

  /**
   * Every object the kustomization makes (what its resources hold, and the ConfigMaps its
   * generators make, named without kustomize's hash suffix), with the file it comes from.
   */
  private static final List<Manifest> manifests = new ArrayList<>();

  /** Every object the optional components add, with the file it comes from. */
  private static final List<Manifest> componentManifests = new ArrayList<>();

  /** Every file the kustomization, the kustomizations it includes and the components read. */
  private static final Set<Path> kustomizationFiles = new TreeSet<>();

  private record Manifest(Path file, Map<String, Object> object) {
    String kind() {
      return (String) object.get("kind");
    }

    String name() {
      return str(object, "metadata", "name");
    }
  }

  @TempDir Path dir;

  /**
   * The pod the Deployment makes, with the generated ConfigMap and the Secret of its mesh's
   * certificates mounted; one per test.
   */
  private DeployedPod pod;

  /** The mesh's CA, the proxy's Secret and the workloads' certificates; one per test. */
  private MeshCertificates mesh;

  @BeforeAll
  static void readTheKustomization() throws IOException {
    read(KUBERNETES, manifests);
    try (Stream<Path> components = Files.list(COMPONENTS)) {
      for (Path component : components.sorted().toList()) {
        read(component, componentManifests);
      }
    }
  }

  /**
   * Reads the kustomization (or Component) in {@code directory} as kustomize would, into {@code
   * into}: its resources, files or kustomizations of their own, and its configMapGenerators'
   * ConfigMaps.
   */
  private static void read(Path directory, List<Manifest> into) throws IOException {
    Path file = directory.resolve("kustomization.yaml");
    Map<String, Object> kustomization = documents(Files.readString(file), file.toString()).get(0);
    into.add(new Manifest(file, kustomization));
    kustomizationFiles.add(file.normalize());
    for (Object resource :
        kustomization.containsKey("resources") ? list(kustomization, "resources") : List.of()) {
      Path path = directory.resolve((String) resource);
      if (Files.isDirectory(path)) {
        read(path, into);
        continue;
      }
      assertThat(path).as("a resource of %s", file).isRegularFile();
      kustomizationFiles.add(path.normalize());
      for (Map<String, Object> object : documents(Files.readString(path), path.toString())) {
        into.add(new Manifest(path, object));
      }
    }
    for (Object item :
        kustomization.containsKey("configMapGenerator")
            ? list(kustomization, "configMapGenerator")
            : List.of()) {
      Map<String, Object> data = new LinkedHashMap<>();
      Path source = file;
      for (String entry : strings(item, "files")) {
        String[] keyAndFile = entry.split("=", 2);
        source = directory.resolve(keyAndFile[keyAndFile.length - 1]);
        assertThat(source)
            .as("a file of %s's configMapGenerator %s", file, get(item, "name"))
            .isRegularFile();
        kustomizationFiles.add(source.normalize());
        data.put(
            keyAndFile.length == 2 ? keyAndFile[0] : source.getFileName().toString(),
            Files.readString(source));
      }
      Map<String, Object> options = Yamls.has(item, "options") ? map(item, "options") : Map.of();
      Map<String, Object> metadata = new LinkedHashMap<>();
      metadata.put("name", get(item, "name"));
      metadata.put("labels", options.getOrDefault("labels", Map.of()));
      into.add(
          new Manifest(
              source,
              Map.of("apiVersion", "v1", "kind", "ConfigMap", "metadata", metadata, "data", data)));
    }
  }

  @Test
  void everyObjectIsAKubernetesObjectWithoutANamespaceAndEveryFileIsTheKustomizations()
      throws IOException {
    Map<String, String> apiVersions = new LinkedHashMap<>();
    for (Manifest manifest :
        Stream.concat(manifests.stream(), componentManifests.stream()).toList()) {
      Map<String, Object> object = manifest.object();
      assertThat(object).as("%s", manifest.file()).containsKeys("apiVersion", "kind");
      apiVersions.put(manifest.kind(), (String) object.get("apiVersion"));
      if (manifest.kind().equals("Kustomization") || manifest.kind().equals("Component")) {
        continue;
      }
      assertThat(manifest.name()).as("%s: metadata.name", manifest.file()).isNotBlank();
      assertThat(map(object, "metadata"))
          .as("%s: the namespace is the one applied to", manifest.file())
          .doesNotContainKey("namespace");
      assertThat(map(object, "metadata", "labels"))
          .as("%s: labels", manifest.file())
          .containsEntry("app.kubernetes.io/name", APP)
          .containsKey("app.kubernetes.io/instance");
    }
    assertThat(apiVersions)
        .containsAllEntriesOf(
            Map.of(
                "ConfigMap", "v1",
                "Deployment", "apps/v1",
                "Service", "v1",
                "HorizontalPodAutoscaler", "autoscaling/v2",
                "PodDisruptionBudget", "policy/v1",
                "NetworkPolicy", "networking.k8s.io/v1",
                "ServiceMonitor", "monitoring.coreos.com/v1",
                "PrometheusRule", "monitoring.coreos.com/v1",
                "Kustomization", "kustomize.config.k8s.io/v1beta1"))
        .containsEntry("Component", "kustomize.config.k8s.io/v1alpha1")
        .containsEntry("Certificate", "cert-manager.io/v1");

    // A file under deploy/kubernetes that neither the kustomization nor a component reads would
    // never be applied.
    Set<Path> files;
    try (Stream<Path> walk = Files.walk(KUBERNETES)) {
      files =
          walk.filter(Files::isRegularFile)
              .map(Path::normalize)
              .collect(Collectors.toCollection(TreeSet::new));
    }
    assertThat(kustomizationFiles)
        .as("the files the kustomization and its components read")
        .containsAll(files);
  }

  /**
   * The config file is a file of its own, made a ConfigMap by a generator (its name hashed, so that
   * a change rolls the pods), and the dashboard a ConfigMap Grafana's sidecar loads: labelled for
   * it, unhashed so that a change replaces it, and the very JSON of deploy/grafana.
   */
  @Test
  void
      theConfigFileAndTheDashboardAreGeneratedConfigMapsTheOneRollingThePodsTheOtherLoadedByGrafana()
          throws IOException {
    Map<String, Object> kustomization = kustomization(KUBERNETES);
    Map<String, Object> configGenerator = cast(list(kustomization, "configMapGenerator").get(0));
    assertThat(configGenerator)
        .as("the config file's generator: hashed names roll the pods")
        .doesNotContainKey("behavior");
    assertThat(Yamls.has(configGenerator, "options", "disableNameSuffixHash")).isFalse();
    assertThat(pod().configMap())
        .as("the ConfigMap mounted at --config")
        .containsEntry(
            "metadata",
            map(
                manifests.stream()
                    .filter(
                        m ->
                            m.kind().equals("ConfigMap")
                                && m.name().equals(get(configGenerator, "name")))
                    .findFirst()
                    .orElseThrow()
                    .object(),
                "metadata"));

    Path grafana = DEPLOY.resolve("grafana");
    assertThat(strings(kustomization, "resources"))
        .as("the kustomization's resources")
        .contains("../grafana");
    Map<String, Object> dashboardGenerator =
        cast(list(kustomization(grafana), "configMapGenerator").get(0));
    assertThat(strings(dashboardGenerator, "files")).containsExactly("xds-proxy-dashboard.json");
    assertThat(map(dashboardGenerator, "options")).containsEntry("disableNameSuffixHash", true);
    Map<String, Object> dashboard = configMap(str(dashboardGenerator, "name"));
    assertThat(map(dashboard, "metadata", "labels")).containsEntry("grafana_dashboard", "1");
    assertThat(map(dashboard, "data"))
        .containsExactly(
            Map.entry(
                "xds-proxy-dashboard.json",
                Files.readString(grafana.resolve("xds-proxy-dashboard.json"))));
  }

  /**
   * kustomize itself, where kubectl is installed, makes the objects this test reads: the same kinds
   * and names, the generated ConfigMaps' data, and the config's hashed name in the Deployment.
   */
  @Test
  void kubectlKustomizeMakesTheObjectsThisTestReads() throws Exception {
    Optional<String> output = kubectlKustomize(KUBERNETES);
    Assumptions.assumeTrue(
        output.isPresent(), "kubectl is not installed: kustomize's own output is not checked");
    List<Map<String, Object>> objects = documents(output.get(), "kubectl kustomize " + KUBERNETES);

    Map<String, Map<String, Object>> built = new TreeMap<>();
    for (Map<String, Object> object : objects) {
      built.put(object.get("kind") + "/" + str(object, "metadata", "name"), object);
    }
    String configMapName =
        str(list(kustomization(KUBERNETES), "configMapGenerator").get(0), "name");
    String hashed =
        built.keySet().stream()
            .filter(
                key -> key.matches("ConfigMap/" + Pattern.quote(configMapName) + "-[a-z0-9]{10}"))
            .findFirst()
            .orElseThrow(
                () ->
                    new AssertionError(
                        "no hashed ConfigMap " + configMapName + " in " + built.keySet()));
    Map<String, Map<String, Object>> read = new TreeMap<>();
    for (Manifest manifest : manifests) {
      if (!manifest.kind().equals("Kustomization")) {
        String key = manifest.kind() + "/" + manifest.name();
        read.put(key.equals("ConfigMap/" + configMapName) ? hashed : key, manifest.object());
      }
    }
    assertThat(built.keySet())
        .as("what kustomize makes, against what this test reads")
        .containsExactlyInAnyOrderElementsOf(read.keySet());
    for (var entry : read.entrySet()) {
      Map<String, Object> object = built.get(entry.getKey());
      if (entry.getKey().startsWith("ConfigMap/")) {
        assertThat(map(object, "data"))
            .as("%s's data", entry.getKey())
            .isEqualTo(map(entry.getValue(), "data"));
        assertThat(map(object, "metadata", "labels"))
            .isEqualTo(map(entry.getValue(), "metadata", "labels"));
      } else if (!entry.getKey().startsWith("Deployment/")) {
        assertThat(object)
            .as("%s as kustomize makes it", entry.getKey())
            .isEqualTo(entry.getValue());
      }
    }
    DeployedPod builtPod = new DeployedPod(objects, secrets(), dir.resolve("built"));
    assertThat(
            str(builtPod.volume((String) builtPod.configMount().get("name")), "configMap", "name"))
        .as("the ConfigMap the built Deployment mounts at --config")
        .isEqualTo(hashed.substring("ConfigMap/".length()));
    // Each pod's files are laid out under a directory of its own: the state directory's too.
    assertThat(builtPod.config().stateDir()).hasValue(builtPod.file("/var/lib/xds-proxy/state"));
    assertThat(builtPod.configKeys()).as("the built pod's config").isEqualTo(pod().configKeys());
  }

  /**
   * An operator's overlay of the kustomization with the cert-manager component, as kustomize (where
   * kubectl is installed) builds it: the kustomization's objects in the overlay's namespace, and
   * the component's Certificate.
   */
  @Test
  void kubectlKustomizeOfAnOverlayWithTheCertManagerComponentAddsItsCertificate() throws Exception {
    Path overlay = Files.createDirectories(dir.resolve("overlay"));
    String base = overlay.toAbsolutePath().relativize(KUBERNETES.toAbsolutePath()).toString();
    Files.writeString(
        overlay.resolve("kustomization.yaml"),
        """
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        namespace: xds
        resources:
          - %s
        components:
          - %s/components/cert-manager
        """
            .formatted(base, base));
    Optional<String> output = kubectlKustomize(overlay);
    Assumptions.assumeTrue(
        output.isPresent(), "kubectl is not installed: kustomize's own output is not checked");
    List<Map<String, Object>> objects = documents(output.get(), "kubectl kustomize " + overlay);

    assertThat(objects)
        .as("the overlay's objects")
        .allSatisfy(object -> assertThat(map(object, "metadata")).containsEntry("namespace", "xds"))
        .hasSize(
            (int)
                    manifests.stream()
                        .filter(manifest -> !manifest.kind().equals("Kustomization"))
                        .count()
                + 1);
    Map<String, Object> certificate =
        objects.stream()
            .filter(object -> object.get("kind").equals("Certificate"))
            .findFirst()
            .orElseThrow();
    assertThat(map(certificate, "spec")).isEqualTo(map(certificate().object(), "spec"));
  }

  /**
   * The component's Certificate makes the Secret the Deployment mounts, for the Service's names,
   * with a key the proxy reads, renewed before the certificate alert fires.
   */
  @Test
  void theCertManagerComponentsCertificateIsForTheServicesNamesAndTheSecretThePodsMount()
      throws Exception {
    Map<String, Object> spec = map(certificate().object(), "spec");
    Set<String> mounted = new TreeSet<>();
    for (Object item : list(pod().pod(), "spec", "volumes")) {
      if (Yamls.has(item, "secret")) {
        mounted.add(str(item, "secret", "secretName"));
      }
    }
    assertThat(mounted).as("the Secrets the pods mount").containsExactly(str(spec, "secretName"));
    String service = one("Service").name();
    String namespace = certificateNamespace();
    assertThat(strings(spec, "dnsNames"))
        .as("the names clients reach the Service by")
        .contains(
            service,
            service + "." + namespace + ".svc",
            service + "." + namespace + ".svc.cluster.local");
    assertThat(map(spec, "privateKey")).containsEntry("encoding", "PKCS8");
    assertThat(strings(spec, "usages")).contains("server auth");
    assertThat(map(spec, "issuerRef")).containsKeys("name", "kind");
    assertThat(Duration.parse("PT" + str(spec, "renewBefore").toUpperCase(Locale.ROOT)))
        .as("renewed before XdsProxyCertificateExpiring warns, 14 days ahead")
        .isGreaterThan(Duration.ofDays(14));
  }

  /**
   * The secure default, against a real proxy started from the ConfigMap's files and the Secret's
   * certificates: each workload is served its own group by its SPIFFE certificate, the control
   * plane sees the group's node from upstream-node.yaml, and clients without a certificate or whose
   * node claims another namespace are refused.
   */
  @Test
  void theConfigMapsSecureDefaultServesEachWorkloadItsOwnGroupAndRefusesTheRest() throws Exception {
    ProxyConfig config = pod().config();
    assertThat(config.tls().clientCa()).as("mutual TLS").isPresent();
    assertThat(config.tenancy().allowClientChosenGroups()).isFalse();
    assertThat(config.tenancy().secretsToUnverifiedClients()).isFalse();
    DeploymentChecks.tlsFilesFromVolumesWithoutSubPath(pod());

    TenantChecks.eachWorkloadIsServedItsOwnGroupAndOthersAreRefused(
        config, mesh(), one("Service").name() + "." + certificateNamespace() + ".svc");
  }

  @Test
  void theConfigMapsConfigStartsARealProxyThatAnswersTheProbesAndServesTheMetrics()
      throws Exception {
    ProxyConfig config = pod().config();

    try (XdsProxy proxy =
        XdsProxy.start(
            config
                .withUpstream()
                .withResourcesDir(DEPLOY.resolve("examples/resources"))
                .withPorts(0, 0, 0))) {
      DeploymentChecks.probesAnswer(pod(), proxy);
      String metricsPath = str(pod().pod(), "metadata", "annotations", "prometheus.io/path");
      HttpResponse<String> metrics = httpGet(proxy, metricsPath);
      assertThat(metrics.statusCode()).as("GET %s", metricsPath).isEqualTo(200);
      assertThat(metrics.body()).contains("xds_");

      serveOneClient(proxy, mesh());
      // A collection, so that the GC pause timer has had a pause to record.
      System.gc();
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(scrapedNames(httpGet(proxy, metricsPath).body()))
                      .containsAll(SCRAPED_AFTER_ONE_CLIENT));
    }
  }

  @Test
  void theConfigMapsUpstreamSettingsOpenARealUpstreamSessionAndItsMetrics() throws Exception {
    ProxyConfig config = pod().config();
    try (ScriptedControlPlane controlPlane = new ScriptedControlPlane();
        XdsProxy proxy =
            XdsProxy.start(config.withUpstream(controlPlane.target()).withPorts(0, 0, 0));
        var client = XdsTestClient.sotwAds(proxy.xdsPort(), cartCredentials())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(clientNode())
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      if (config.upstreamProtocol() == AdsUpstream.Protocol.DELTA) {
        assertThat(controlPlane.nextDeltaRequest(WAIT))
            .as("the proxy's Delta request upstream")
            .isNotNull();
      } else {
        assertThat(controlPlane.nextRequest(WAIT))
            .as("the proxy's SotW request upstream")
            .isNotNull();
      }

      await()
          .atMost(WAIT)
          .untilAsserted(() -> assertThat(httpGet(proxy, "/readyz").statusCode()).isEqualTo(200));
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(scrapedNames(httpGet(proxy, "/metrics").body()))
                      .containsAll(SCRAPED_WITH_AN_UPSTREAM));
    }
  }

  @Test
  void theDeploymentsPortsProbesAnnotationsAndDrainAreTheConfigsOwn() throws Exception {
    ProxyConfig config = pod().config();
    DeploymentChecks.portsProbesAndDrain(pod(), config);
    assertThat(DeploymentChecks.stateVolume(pod(), config)).containsKey("emptyDir");
    DeploymentChecks.scrapeAnnotations(pod(), config);
    DeploymentChecks.spreadAndResources(pod());
    assertThat(pod().configText())
        .as("the config file the pod reads at --config")
        .isEqualTo(Files.readString(KUBERNETES.resolve("xds-proxy.yaml")));
  }

  @Test
  void theContainerRunsAsTheImagesNonRootUserOnAReadOnlyRootFilesystem() throws IOException {
    DeploymentChecks.securityContext(pod(), Integer.parseInt(dockerUser().split(":")[0]));
  }

  @Test
  void theServiceHpaPdbServiceMonitorAndNetworkPolicyPointAtTheDeploymentsPods() throws Exception {
    ProxyConfig config = pod().config();
    Map<String, Object> service = one("Service").object();
    Map<String, Integer> servicePorts = DeploymentChecks.service(pod(), config, service);
    DeploymentChecks.serviceMonitor(config, service, servicePorts, one("ServiceMonitor").object());
    DeploymentChecks.podDisruptionBudget(pod(), one("PodDisruptionBudget").object());

    Map<Integer, Map<String, Object>> rules =
        DeploymentChecks.networkPolicy(pod(), config, one("NetworkPolicy").object());
    assertThat(list(rules.get(config.xdsPort()), "from"))
        .as("who may reach the xDS port")
        .allSatisfy(peer -> assertThat(map(peer)).containsOnlyKeys("namespaceSelector"));
    assertThat(list(rules.get(config.monitoringPort()), "from"))
        .as("who may reach the monitoring port")
        .containsExactly(
            Map.of(
                "namespaceSelector",
                Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "monitoring"))));

    Map<String, Object> hpa = one("HorizontalPodAutoscaler").object();
    assertThat(map(hpa, "spec", "scaleTargetRef"))
        .containsEntry("apiVersion", "apps/v1")
        .containsEntry("kind", "Deployment")
        .containsEntry("name", one("Deployment").name());
    assertThat((Integer) get(hpa, "spec", "minReplicas"))
        .isGreaterThanOrEqualTo(2)
        .isLessThanOrEqualTo((Integer) get(pod().deployment(), "spec", "replicas"));

    // Comments name metrics too (the HPA's Pods metric): they must be ones the proxy exports. The
    // alerting rules' metrics, some only exported with TLS, are AlertRulesTest's.
    for (Manifest manifest : manifests) {
      if (!manifest.kind().equals("PrometheusRule")) {
        assertThat(metricNames(Files.readString(manifest.file())))
            .as("metrics named in %s", manifest.file())
            .isSubsetOf(METRICS);
      }
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
        assertThat(str(metric, "pods", "target", "type"))
            .as("the Pods metric's target")
            .isEqualTo("AverageValue");
        assertThat(averageValue(metric)).as("the Pods metric's target per pod").isPositive();
        podsMetrics.add(str(metric, "pods", "metric", "name"));
      } else {
        // A utilization is a share of what the container requests: no request, no utilization.
        assertThat(metric.get("type")).as("the autoscaler's other metrics").isEqualTo("Resource");
        String resource = str(metric, "resource", "name");
        if (str(metric, "resource", "target", "type").equals("Utilization")) {
          assertThat(map(pod().container(), "resources", "requests"))
              .as("what a %s utilization is a share of", resource)
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
      assertThat(METRICS)
          .as("the series of the adapter rule serving %s (%s)", metric, ADAPTER_VALUES)
          .contains(series);
      Map<String, Object> overrides = map(rule, "resources", "overrides");
      Map<String, String> resources = new LinkedHashMap<>();
      overrides.forEach(
          (label, to) -> resources.put(str(to, "resource").replaceAll("s$", ""), label));
      assertThat(resources)
          .as("labels the rule ties to Kubernetes resources")
          .containsKeys("namespace", "pod");
      for (String label : resources.values()) {
        assertThat(seriesQuery)
            .as("the rule's series query asks for series with a %s label", label)
            .contains(label + "!=\"\"");
      }
      assertThat(str(rule, "metricsQuery").replace(" ", ""))
          .as("the rule's query: the series summed over its own labels, per pod (a gauge: no rate)")
          .isEqualTo("sum(<<.Series>>{<<.LabelMatchers>>})by(<<.GroupBy>>)");
      seriesByMetric.put(metric, series);
    }

    try (XdsProxy proxy =
        XdsProxy.start(
            pod()
                .config()
                .withUpstream()
                .withResourcesDir(DEPLOY.resolve("examples/resources"))
                .withPorts(0, 0, 0))) {
      try (var sotwAds = XdsTestClient.sotwAds(proxy.xdsPort(), cartCredentials());
          var deltaAds = XdsTestClient.deltaAds(proxy.xdsPort(), cartCredentials());
          var sotwCds =
              new XdsTestClient<>(
                  proxy.xdsPort(),
                  cartCredentials(),
                  ClusterDiscoveryServiceGrpc.getStreamClustersMethod())) {
        DiscoveryRequest clusters =
            DiscoveryRequest.newBuilder()
                .setNode(clientNode())
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .build();
        sotwAds.send(clusters);
        sotwCds.send(clusters);
        deltaAds.send(
            DeltaDiscoveryRequest.newBuilder()
                .setNode(clientNode())
                .setTypeUrl(TypeUrl.CLUSTER.url())
                .build());
        assertThat(sotwAds.next(WAIT)).as("SotW ADS: %s", sotwAds.transcript()).isNotNull();
        assertThat(sotwCds.next(WAIT)).as("SotW CDS: %s", sotwCds.transcript()).isNotNull();
        assertThat(deltaAds.next(WAIT)).as("Delta ADS: %s", deltaAds.transcript()).isNotNull();

        for (var entry : seriesByMetric.entrySet()) {
          String body = httpGet(proxy, "/metrics").body();
          assertThat(samples(body, entry.getValue()))
              .as("the series of %s in a scrape of the proxy:%n%s", entry.getKey(), body)
              .hasSizeGreaterThan(1);
          await()
              .atMost(WAIT)
              .untilAsserted(
                  () ->
                      assertThat(perPod(httpGet(proxy, "/metrics").body(), entry.getValue()))
                          .as(
                              "%s of a pod with three streams open (SotW ADS, SotW CDS, Delta ADS)",
                              entry.getKey())
                          .isEqualTo(3));
        }
      }
      for (var entry : seriesByMetric.entrySet()) {
        await()
            .atMost(WAIT)
            .untilAsserted(
                () ->
                    assertThat(perPod(httpGet(proxy, "/metrics").body(), entry.getValue()))
                        .as("%s once they are closed", entry.getKey())
                        .isZero());
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
        assertThat(guide.contains(target))
            .as("%s names the Pods metric's target, %s", SCALING_GUIDE, target)
            .isTrue();
      }
    }
    String limit = str(pod().container(), "resources", "limits", "memory");
    Matcher quantity = Pattern.compile("([0-9]+)([MG])i").matcher(limit);
    assertThat(quantity.matches()).as("the memory limit %s, in Mi or Gi", limit).isTrue();
    String limitInGuide = quantity.group(1) + " " + quantity.group(2) + "iB";
    assertThat(guide.contains(limitInGuide))
        .as("%s names the memory limit, %s", SCALING_GUIDE, limitInGuide)
        .isTrue();
    String heapShare =
        dockerfile().stream()
            .filter(instruction -> instruction[0].equals("ENTRYPOINT"))
            .map(instruction -> instruction[1])
            .flatMap(line -> Pattern.compile("-XX:MaxRAMPercentage=[0-9]+").matcher(line).results())
            .map(found -> found.group())
            .findFirst()
            .orElseThrow();
    assertThat(guide.contains(heapShare))
        .as("%s names the image's heap share, %s", SCALING_GUIDE, heapShare)
        .isTrue();
  }

  @Test
  void theDashboardQueriesOnlyExportedMetricsAndShowsEveryOne() throws IOException {
    JsonObject dashboard =
        JsonParser.parseString(Files.readString(DEPLOY.resolve("grafana/xds-proxy-dashboard.json")))
            .getAsJsonObject();
    assertThat(dashboard.get("schemaVersion").getAsInt()).isGreaterThanOrEqualTo(36);

    Map<String, JsonObject> variables = new LinkedHashMap<>();
    for (JsonElement variable : dashboard.getAsJsonObject("templating").getAsJsonArray("list")) {
      variables.put(
          variable.getAsJsonObject().get("name").getAsString(), variable.getAsJsonObject());
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
      assertThat(panel.getAsJsonObject("datasource").get("uid").getAsString())
          .as("panel %s's data source", title)
          .isEqualTo("${datasource}");
      assertThat(panel.getAsJsonArray("targets")).as("panel %s's queries", title).isNotEmpty();
      for (JsonElement target : panel.getAsJsonArray("targets")) {
        String expr = target.getAsJsonObject().get("expr").getAsString();
        assertThat(expr).as("panel %s", title).contains("$job").contains("$pod");
        assertThat(metricNames(expr))
            .as("metrics of panel %s: %s", title, expr)
            .isNotEmpty()
            .isSubsetOf(METRICS);
        used.addAll(metricNames(expr));
      }
    }
    for (JsonObject variable : variables.values()) {
      if (variable.has("definition")) {
        assertThat(metricNames(variable.get("definition").getAsString())).isSubsetOf(METRICS);
      }
    }
    assertThat(used)
        .as("the metrics the dashboard shows")
        .containsExactlyInAnyOrderElementsOf(METRICS);
  }

  // The ConfigMap, the Deployment and the files they name.

  private DeployedPod pod() throws IOException {
    if (pod == null) {
      List<Map<String, Object>> objects = manifests.stream().map(Manifest::object).toList();
      pod = new DeployedPod(objects, secrets(), dir.resolve("pod"));
    }
    return pod;
  }

  /** The credentials of {@link #clientNode()}'s workload. */
  private ChannelCredentials cartCredentials() throws IOException {
    return mesh().workload(TenantChecks.CART.namespace(), TenantChecks.CART.serviceAccount());
  }

  private MeshCertificates mesh() {
    if (mesh == null) {
      mesh = new MeshCertificates(dir);
    }
    return mesh;
  }

  /** The Secret the cert-manager component's Certificate makes, as cert-manager would write it. */
  private Map<String, Map<String, String>> secrets() throws IOException {
    Map<String, Object> spec = map(certificate().object(), "spec");
    return Map.of(str(spec, "secretName"), mesh().tlsSecret(strings(spec, "dnsNames")));
  }

  private static Manifest certificate() {
    List<Manifest> found =
        componentManifests.stream().filter(m -> m.kind().equals("Certificate")).toList();
    assertThat(found).as("Certificates of %s", COMPONENTS).hasSize(1);
    return found.get(0);
  }

  /** The namespace the Certificate's names are for (the README's; an operator changes it). */
  private static String certificateNamespace() {
    Pattern serviceName =
        Pattern.compile(Pattern.quote(one("Service").name()) + "\\.([^.]+)\\.svc");
    return strings(certificate().object(), "spec", "dnsNames").stream()
        .map(serviceName::matcher)
        .filter(Matcher::matches)
        .map(found -> found.group(1))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no <service>.<namespace>.svc among the dnsNames"));
  }

  private static Map<String, Object> kustomization(Path directory) {
    Path file = directory.resolve("kustomization.yaml").normalize();
    return manifests.stream()
        .filter(manifest -> manifest.file().normalize().equals(file))
        .findFirst()
        .orElseThrow()
        .object();
  }

  private static Map<String, Object> configMap(String name) {
    return manifests.stream()
        .filter(manifest -> manifest.kind().equals("ConfigMap") && manifest.name().equals(name))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no ConfigMap " + name))
        .object();
  }

  /**
   * What {@code kubectl kustomize} makes of {@code directory}; empty if kubectl is not installed.
   */
  private static Optional<String> kubectlKustomize(Path directory)
      throws IOException, InterruptedException {
    Process kubectl;
    try {
      kubectl =
          new ProcessBuilder("kubectl", "kustomize", directory.toString())
              .redirectErrorStream(true)
              .start();
    } catch (IOException notInstalled) {
      return Optional.empty();
    }
    String output = new String(kubectl.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(kubectl.waitFor(60, TimeUnit.SECONDS)).as("kubectl kustomize ends").isTrue();
    assertThat(kubectl.exitValue()).as("kubectl kustomize %s:%n%s", directory, output).isZero();
    return Optional.of(output);
  }

  private static Manifest one(String kind) {
    List<Manifest> found =
        manifests.stream().filter(manifest -> kind.equals(manifest.kind())).toList();
    assertThat(found).as("objects of kind %s under %s", kind, KUBERNETES).hasSize(1);
    return found.get(0);
  }

  /** A Pods metric's {@code averageValue}: a whole number, maybe with a {@code k} suffix. */
  private static long averageValue(Map<String, Object> metric) {
    Object value = get(metric, "pods", "target", "averageValue");
    Matcher quantity = Pattern.compile("([0-9]+)(k?)").matcher(String.valueOf(value));
    assertThat(quantity.matches())
        .as("the averageValue %s, a whole number of streams", value)
        .isTrue();
    return Long.parseLong(quantity.group(1)) * (quantity.group(2).isEmpty() ? 1 : 1000);
  }

  /**
   * The rule of prometheus-adapter's values that serves {@code metric} in the custom metrics API:
   * its {@code name.matches} found in the series' name, expanded as {@code name.as} says (by
   * default the first capture group, or the whole match).
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
      Matcher matcher =
          Pattern.compile(String.valueOf(name.getOrDefault("matches", ".*"))).matcher(series);
      if (!matcher.find()) {
        served.add(
            "nothing from "
                + series
                + " (name.matches "
                + name.get("matches")
                + " is not found in it)");
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
    throw new AssertionError(
        "no rule of " + ADAPTER_VALUES + " serves " + metric + "; its rules serve " + served);
  }

  // The Dockerfile.

  /** The Dockerfile's instructions, each as {keyword, arguments}. */
  private static List<String[]> dockerfile() throws IOException {
    return DockerImageTest.instructions(DEPLOY.resolve("Dockerfile")).stream()
        .map(instruction -> new String[] {instruction.keyword(), instruction.arguments()})
        .toList();
  }

  private static List<String> arguments(List<String[]> instructions, String keyword) {
    return instructions.stream()
        .filter(instruction -> instruction[0].equals(keyword))
        .map(instruction -> instruction[1])
        .toList();
  }

  /** The final stage's USER. */
  private static String dockerUser() throws IOException {
    List<String> users = arguments(dockerfile(), "USER");
    assertThat(users).as("USER in the Dockerfile").isNotEmpty();
    return users.get(users.size() - 1);
  }

  // The running proxy.

  /**
   * A client with a workload's SPIFFE certificate and its Istio sidecar's node (placed by most
   * node-group rules too: cluster, locality, an Istio-style id) that ACKs the clusters and NACKs
   * the endpoints it is sent.
   */
  private static void serveOneClient(XdsProxy proxy, MeshCertificates mesh) throws IOException {
    try (var client =
        XdsTestClient.sotwAds(
            proxy.xdsPort(),
            mesh.workload(TenantChecks.CART.namespace(), TenantChecks.CART.serviceAccount()))) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(clientNode())
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      DiscoveryResponse clusters = client.next(WAIT);
      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo(clusters.getVersionInfo())
              .setResponseNonce(clusters.getNonce())
              .build());
      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addResourceNames("example-cluster")
              .build());
      DiscoveryResponse endpoints = client.next(WAIT);
      assertThat(endpoints.getTypeUrl())
          .as("transcript:%n%s", client.transcript())
          .isEqualTo(TypeUrl.ENDPOINT.url());
      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addResourceNames("example-cluster")
              .setResponseNonce(endpoints.getNonce())
              .setErrorDetail(Status.newBuilder().setCode(3).setMessage("rejected by the test"))
              .build());
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(httpGet(proxy, "/metrics").body())
                      .as("the NACK counted")
                      .contains("xds_downstream_nacks_total{"));
    }
  }

  private static Node clientNode() {
    return TenantChecks.CART.node().toBuilder()
        .setLocality(
            Locality.newBuilder().setRegion("region").setZone("zone-a").setSubZone("rack-1"))
        .build();
  }

  // Metric names.

  /**
   * The names a Prometheus text exposition has samples of, histograms and timers by their base
   * name.
   */
  private static Set<String> scrapedNames(String exposition) {
    return exposition
        .lines()
        .filter(line -> !line.startsWith("#") && !line.isBlank())
        .map(line -> baseName(line.split("[{ ]", 2)[0]))
        .collect(Collectors.toCollection(TreeSet::new));
  }

  /** The values of {@code name}'s samples in a Prometheus text exposition, by their label set. */
  private static Map<String, Double> samples(String exposition, String name) {
    Map<String, Double> samples = new LinkedHashMap<>();
    Pattern sample = Pattern.compile(Pattern.quote(name) + "(\\{[^}]*})?\\s+(\\S+)");
    exposition
        .lines()
        .filter(line -> !line.startsWith("#"))
        .map(sample::matcher)
        .filter(Matcher::matches)
        .forEach(
            found ->
                samples.put(
                    found.group(1) == null ? "" : found.group(1),
                    Double.parseDouble(found.group(2))));
    return samples;
  }

  /**
   * What prometheus-adapter's {@code sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)} gives
   * for the pod a scrape comes from: every sample of the series, whatever its other labels, added
   * up.
   */
  private static long perPod(String exposition, String name) {
    return Math.round(
        samples(exposition, name).values().stream().mapToDouble(Double::doubleValue).sum());
  }

  /**
   * The metric names in a PromQL expression or a text, histograms and timers by their base name.
   */
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
      if (name.endsWith(suffix)
          && HISTOGRAMS.contains(name.substring(0, name.length() - suffix.length()))) {
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
}
