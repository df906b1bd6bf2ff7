package io.xdsproxy.app;

import static io.xdsproxy.app.testing.Yamls.cast;
import static io.xdsproxy.app.testing.Yamls.documents;
import static io.xdsproxy.app.testing.Yamls.get;
import static io.xdsproxy.app.testing.Yamls.list;
import static io.xdsproxy.app.testing.Yamls.map;
import static io.xdsproxy.app.testing.Yamls.str;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import com.marcnuri.helm.TemplateCommand;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.TlsChannelCredentials;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.app.testing.Yamls;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

/**
 * The Helm chart (deploy/helm/xds-proxy) against the program, as DeployManifestsTest holds the
 * kustomization: helm lints it, renders it with its default values, with every toggle on and
 * plaintext, and the rendered pod's config file, with the files its volumes mount (the Secrets made
 * from certificates of the test's mesh), is parsed as {@code --config} is and started as a real
 * proxy that answers the rendered probes and serves each workload its own group by its certificate,
 * refusing the rest.
 */
class HelmChartTest {

  private static final Path CHART = Path.of("..", "deploy", "helm", "xds-proxy");
  private static final Path KUBERNETES = Path.of("..", "deploy", "kubernetes");
  private static final Duration WAIT = DeploymentChecks.WAIT;
  private static final String RELEASE = "edge";

  @TempDir Path dir;

  @Test
  void theChartLintsWithoutWarnings() {
    LintResult lint = new Helm(CHART).lint().strict().call();

    assertThat(lint.isFailed()).as("helm lint --strict: %s", lint.getMessages()).isFalse();
    assertThat(lint.getMessages())
        .as("helm lint --strict")
        .noneMatch(message -> message.contains("[WARNING]") || message.contains("[ERROR]"));
  }

  @Test
  void theDefaultValuesRenderThePodOfTheKustomizationWhoseConfigStartsARealProxy()
      throws Exception {
    List<Map<String, Object>> objects = template(null);
    MeshCertificates mesh = new MeshCertificates(dir);
    String fullname = str(one(objects, "Service"), "metadata", "name");
    // The Secret the chart's Certificate would make (tls.certificate.create), for its names.
    DeployedPod pod =
        new DeployedPod(
            objects,
            Map.of(
                "xds-proxy-tls",
                mesh.tlsSecret(
                    List.of(
                        fullname,
                        fullname + ".xds",
                        fullname + ".xds.svc",
                        fullname + ".xds.svc.cluster.local"))),
            dir.resolve("pod"));
    ProxyConfig config = pod.config();

    // The pod's paths (its mounts) are the chart's; what the files say is the kustomization's.
    assertThat(pod.configKeys())
        .as("the chart's default config, against the kustomization's xds-proxy.yaml")
        .isEqualTo(yaml(KUBERNETES.resolve("xds-proxy.yaml")));
    assertThat(cast(new Yaml().load(str(pod.configMap(), "data", "upstream-node.yaml"))))
        .as("the chart's upstream node, against the kustomization's upstream-node.yaml")
        .isEqualTo(yaml(KUBERNETES.resolve("upstream-node.yaml")));
    DeploymentChecks.tlsFilesFromVolumesWithoutSubPath(pod);
    DeploymentChecks.portsProbesAndDrain(pod, config);
    assertThat(DeploymentChecks.stateVolume(pod, config)).containsKey("emptyDir");
    DeploymentChecks.scrapeAnnotations(pod, config);
    DeploymentChecks.spreadAndResources(pod);
    DeploymentChecks.securityContext(pod, 10001);
    DeploymentChecks.service(pod, config, one(objects, "Service"));
    DeploymentChecks.podDisruptionBudget(pod, one(objects, "PodDisruptionBudget"));
    assertThat(map(pod.pod(), "metadata", "annotations"))
        .as("the pods' annotations")
        .containsEntry("checksum/config", sha256(pod.configText()))
        .containsEntry(
            "checksum/upstream-node", sha256(str(pod.configMap(), "data", "upstream-node.yaml")));
    assertThat(str(pod.container(), "image"))
        .isEqualTo("xds-proxy:" + str(chartYaml(), "appVersion"));
    assertThat(map(pod.deployment(), "spec"))
        .as("replicas, left to the autoscaler")
        .doesNotContainKey("replicas");
    assertThat(map(one(objects, "HorizontalPodAutoscaler"), "spec", "scaleTargetRef"))
        .containsEntry("name", get(pod.deployment(), "metadata", "name"));
    assertThat(objects)
        .as(
            "objects off by default (they need CRDs, a CNI that enforces policies, Grafana's sidecar)")
        .noneMatch(
            object ->
                List.of("NetworkPolicy", "ServiceMonitor", "PrometheusRule", "Certificate")
                    .contains(object.get("kind")))
        .filteredOn(object -> object.get("kind").equals("ConfigMap"))
        .hasSize(1);
    for (Map<String, Object> object : objects) {
      assertThat(map(object, "metadata", "labels"))
          .as("%s's labels", object.get("kind"))
          .containsEntry("app.kubernetes.io/name", "xds-proxy")
          .containsEntry("app.kubernetes.io/instance", RELEASE)
          .containsKeys(
              "helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version");
    }

    try (XdsProxy proxy =
        XdsProxy.start(
            config
                .withUpstream()
                .withResourcesDir(Path.of("../deploy/examples/resources"))
                .withPorts(0, 0, 0))) {
      DeploymentChecks.probesAnswer(pod, proxy);
    }
    TenantChecks.eachWorkloadIsServedItsOwnGroupAndOthersAreRefused(
        config, mesh, fullname + ".xds.svc");
  }

  /**
   * Plaintext is asked for, and the node-group key with it: the rendering refuses a key the
   * clients' certificates decide when there are none, naming the part and what to give; with parts
   * the clients choose, the port serves plaintext clients, each the group its node names.
   */
  @Test
  void plaintextNeedsANodeGroupKeyTheClientsChooseAndThenServesWhatTheyName() throws Exception {
    assertThatThrownBy(() -> template("tls: {plaintext: true}"))
        .hasMessageContaining("config.node-group-key part metadata:NAMESPACE=san:")
        .hasMessageContaining("needs client certificates")
        .hasMessageContaining("metadata:NAMESPACE and metadata:SERVICE_ACCOUNT");

    List<Map<String, Object>> objects =
        template(
            """
        tls:
          plaintext: true
        config:
          node-group-key: ['metadata:NAMESPACE', 'metadata:SERVICE_ACCOUNT']
        """);
    DeployedPod pod = new DeployedPod(objects, Map.of(), dir.resolve("pod"));
    ProxyConfig config = pod.config();
    assertThat(config.tls().enabled()).as("TLS on the xDS port").isFalse();
    assertThat(list(pod.pod(), "spec", "volumes"))
        .as("the pod's volumes: no Secret of the xDS port's TLS")
        .noneMatch(volume -> Yamls.has(volume, "secret"));

    try (XdsProxy proxy =
            XdsProxy.start(
                config
                    .withUpstream()
                    .withResourcesDir(Path.of("../deploy/examples/resources"))
                    .withPorts(0, 0, 0));
        var client = XdsTestClient.sotwAds(proxy.xdsPort());
        var claimsAnother = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(TenantChecks.clusters(TenantChecks.CART.node()));
      assertThat(client.next(WAIT).getResourcesCount())
          .as("clusters served in plaintext: %s", client.transcript())
          .isPositive();
      // What plaintext gives up: any client names any group, and is served it.
      claimsAnother.send(
          TenantChecks.clusters(TenantChecks.CART.node(TenantChecks.TELLER.namespace())));
      assertThat(claimsAnother.next(WAIT).getResourcesCount())
          .as("a client naming another namespace: %s", claimsAnother.transcript())
          .isPositive();
    }
  }

  @Test
  void
      withEveryToggleOnThePodServesTlsFromTheMountedSecretsAndTheMonitoringObjectsAreKustomizesOwn()
          throws Exception {
    Ca serverCa = TestCertificates.ca("xds", dir);
    Ca clientCa = TestCertificates.ca("clients", dir);
    Ca controlPlaneCa = TestCertificates.ca("control-plane", dir);
    List<String> serviceNames =
        List.of("edge-xds", "edge-xds.xds", "edge-xds.xds.svc", "edge-xds.xds.svc.cluster.local");
    Issued server = serverCa.issueForHosts("edge-xds", serviceNames);
    Issued client = clientCa.issue("envoy", TenantChecks.CART.spiffeId());
    Issued upstreamClient = TestCertificates.ca("proxies", dir).issue("edge-xds-client");
    Map<String, Map<String, String>> external =
        Map.of(
            "xds-server-tls", tlsSecret(server),
            "xds-clients-bundle", Map.of("bundle.pem", Files.readString(clientCa.pem())),
            "istiod-ca", Map.of("ca.crt", Files.readString(controlPlaneCa.pem())),
            "xds-proxy-client-tls", tlsSecret(upstreamClient));
    String digest = "sha256:" + "0123456789abcdef".repeat(4);
    List<Map<String, Object>> objects =
        template(
            """
        fullnameOverride: edge-xds
        image:
          digest: %s
        config:
          rest-port: 18080
          drain-time: 2m
        tls:
          server: {secretName: xds-server-tls}
          clientCa: {configMapName: xds-clients-bundle, key: bundle.pem}
          upstreamCa: {secretName: istiod-ca}
          upstreamClient: {secretName: xds-proxy-client-tls}
          upstreamToken: {audience: istio-ca}
          certificate: {create: true, issuerRef: {name: mesh-ca}}
        monitoring:
          serviceMonitor: {enabled: true, labels: {release: prometheus}}
          prometheusRule: {enabled: true}
          dashboard: {enabled: true, namespace: monitoring}
        networkPolicy:
          enabled: true
        stateDir:
          persistentVolumeClaim: {claimName: xds-proxy-state}
        """
                .formatted(digest));
    DeployedPod pod = new DeployedPod(objects, external, dir.resolve("pod"));
    ProxyConfig config = pod.config();

    // Each TLS key of the config names a file of the volume mounted from the Secret given for it.
    Map<String, String> sources =
        Map.of(
            "tls-cert",
            "xds-server-tls",
            "tls-key",
            "xds-server-tls",
            "tls-client-ca",
            "xds-clients-bundle",
            "upstream-ca",
            "istiod-ca",
            "upstream-cert",
            "xds-proxy-client-tls",
            "upstream-key",
            "xds-proxy-client-tls");
    Map<String, String> mountedFrom = mountedFiles(pod);
    sources.forEach(
        (key, source) ->
            assertThat(mountedFrom)
                .as("the file config key %s names", key)
                .containsEntry(String.valueOf(pod.configKeys().get(key)), source));
    assertThat(config.tls().cert())
        .hasValue(pod.file(String.valueOf(pod.configKeys().get("tls-cert"))));
    assertThat(config.upstreamTls().enabled()).as("TLS to the control plane").isTrue();
    assertThat(config.upstreamTls().tokenFile())
        .as("the token the kubelet projects for istiod, where upstream-token-file reads it")
        .hasValue(pod.file(String.valueOf(pod.configKeys().get("upstream-token-file"))));
    assertThat(Files.readString(config.upstreamTls().tokenFile().get()))
        .isEqualTo("kubelet-token-for-istio-ca");

    DeploymentChecks.portsProbesAndDrain(pod, config);
    assertThat(map(DeploymentChecks.stateVolume(pod, config), "persistentVolumeClaim"))
        .containsEntry("claimName", "xds-proxy-state");
    assertThat(config.restPort()).hasValue(18080);
    assertThat((Integer) get(pod.pod(), "spec", "terminationGracePeriodSeconds"))
        .as("the grace period, from drain-time 2m")
        .isGreaterThan(120 + 5);
    assertThat(map(pod.pod(), "metadata", "annotations"))
        .as("with a ServiceMonitor, no scrape annotations")
        .containsEntry("checksum/config", sha256(pod.configText()))
        .doesNotContainKey("prometheus.io/scrape");
    assertThat(map(pod.pod(), "metadata", "annotations").get("checksum/config"))
        .as("a changed config's checksum")
        .isNotEqualTo(
            map(
                    new DeployedPod(template(null), Map.of(), dir.resolve("default")).pod(),
                    "metadata",
                    "annotations")
                .get("checksum/config"));
    assertThat(str(pod.container(), "image")).isEqualTo("xds-proxy@" + digest);

    Map<String, Object> certificate = one(objects, "Certificate");
    assertThat(map(certificate, "spec"))
        .as("the Certificate of the server Secret")
        .containsEntry("secretName", "xds-server-tls")
        .containsEntry("dnsNames", serviceNames)
        .containsEntry(
            "issuerRef",
            Map.of("name", "mesh-ca", "kind", "ClusterIssuer", "group", "cert-manager.io"));
    DeploymentChecks.tlsFilesFromVolumesWithoutSubPath(pod);

    Map<String, Object> service = one(objects, "Service");
    Map<String, Integer> servicePorts = DeploymentChecks.service(pod, config, service);
    DeploymentChecks.serviceMonitor(config, service, servicePorts, one(objects, "ServiceMonitor"));
    assertThat(map(one(objects, "ServiceMonitor"), "metadata", "labels"))
        .containsEntry("release", "prometheus");
    Map<Integer, Map<String, Object>> rules =
        DeploymentChecks.networkPolicy(pod, config, one(objects, "NetworkPolicy"));
    assertThat(list(rules.get(config.xdsPort()), "from"))
        .as("the xDS port's peers, the values' default")
        .containsExactly(
            Map.of("namespaceSelector", Map.of("matchLabels", Map.of("xds-proxy-client", "true"))));

    // One source of alerting rules and of the dashboard for the chart and the kustomization.
    Map<String, Object> kustomizeRule =
        documents(Files.readString(KUBERNETES.resolve("prometheusrule.yaml")), "rules").get(0);
    assertThat(map(one(objects, "PrometheusRule"), "spec")).isEqualTo(map(kustomizeRule, "spec"));
    Map<String, Object> dashboard =
        objects.stream()
            .filter(
                object ->
                    object.get("kind").equals("ConfigMap")
                        && map(object, "metadata", "labels").containsKey("grafana_dashboard"))
            .findFirst()
            .orElseThrow();
    assertThat(map(dashboard, "metadata")).containsEntry("namespace", "monitoring");
    assertThat(map(dashboard, "metadata", "labels")).containsEntry("grafana_dashboard", "1");
    assertThat(map(dashboard, "data"))
        .containsExactly(
            Map.entry(
                "xds-proxy-dashboard.json",
                Files.readString(Path.of("..", "deploy", "grafana", "xds-proxy-dashboard.json"))));

    try (XdsProxy proxy =
        XdsProxy.start(
            config
                .withUpstream()
                .withResourcesDir(Path.of("../deploy/examples/resources"))
                .withPorts(0, 0, 0))) {
      DeploymentChecks.probesAnswer(pod, proxy);
      var credentials =
          TlsChannelCredentials.newBuilder()
              .trustManager(serverCa.pem().toFile())
              .keyManager(client.cert().toFile(), client.key().toFile())
              .build();
      try (var xds = XdsTestClient.sotwAds(proxy.xdsPort(), credentials)) {
        xds.send(TenantChecks.clusters(TenantChecks.CART.node()));
        DiscoveryResponse clusters = xds.next(WAIT);
        assertThat(clusters.getResourcesCount())
            .as("clusters served over the mounted TLS: %s", xds.transcript())
            .isPositive();
      }
    }
  }

  @Test
  void aFileKeyGivenInTheConfigIsRefusedForTheValuesThatSetIt() {
    assertThatThrownBy(
            () ->
                template(
                    """
        config:
          tls-cert: /somewhere/tls.crt
        """))
        .hasMessageContaining("config.tls-cert is set from tls.*");
    assertThatThrownBy(
            () ->
                template(
                    """
        config:
          upstream-node: /somewhere/node.yaml
        """))
        .hasMessageContaining("config.upstream-node is set from upstreamNode");
    assertThatThrownBy(() -> template("tls: {certificate: {create: true}}"))
        .hasMessageContaining("tls.certificate.create needs tls.certificate.issuerRef.name");
    assertThatThrownBy(() -> template("tls: {upstreamToken: {audience: istio-ca}}"))
        .as("a token to a plaintext control plane")
        .hasMessageContaining("tls.upstreamToken is sent only over TLS");
    assertThatThrownBy(
            () ->
                template(
                    """
        config:
          upstream-token-file: /somewhere/token
        """))
        .hasMessageContaining("config.upstream-token-file is set from tls.*");
  }

  // Rendering.

  /**
   * The objects {@code helm template} renders with the chart's values and {@code values} over them.
   */
  private List<Map<String, Object>> template(String values) throws IOException {
    TemplateCommand template =
        new Helm(CHART).template().withName(RELEASE).withNamespace("xds").withKubeVersion("1.30.0");
    if (values != null) {
      template =
          template.withValuesFile(
              Files.writeString(Files.createTempFile(dir, "values", ".yaml"), values));
    }
    return documents(template.call(), "helm template " + CHART);
  }

  private static Map<String, Object> one(List<Map<String, Object>> objects, String kind) {
    List<Map<String, Object>> found =
        objects.stream().filter(object -> kind.equals(object.get("kind"))).toList();
    assertThat(found).as("rendered objects of kind %s", kind).hasSize(1);
    return found.get(0);
  }

  private static Map<String, Object> yaml(Path file) throws IOException {
    return cast(new Yaml().load(Files.readString(file)));
  }

  private static Map<String, Object> chartYaml() throws IOException {
    return documents(Files.readString(CHART.resolve("Chart.yaml")), "Chart.yaml").get(0);
  }

  /**
   * Every file the container's Secret and ConfigMap volumes put in the pod, by its path in the pod,
   * with the name of the Secret or ConfigMap it comes from.
   */
  private static Map<String, String> mountedFiles(DeployedPod pod) {
    Map<String, String> files = new LinkedHashMap<>();
    for (Object item : list(pod.container(), "volumeMounts")) {
      Map<String, Object> mount = cast(item);
      Map<String, Object> volume = pod.volume(str(mount, "name"));
      Map<String, Object> source =
          volume.containsKey("secret")
              ? map(volume, "secret")
              : volume.containsKey("configMap") ? map(volume, "configMap") : null;
      if (source != null && source.containsKey("items")) {
        String name =
            (String)
                (source.containsKey("secretName") ? source.get("secretName") : source.get("name"));
        for (Object entry : list(source, "items")) {
          files.put(str(mount, "mountPath") + "/" + str(entry, "path"), name);
        }
      }
    }
    return files;
  }

  private static Map<String, String> tlsSecret(Issued issued) throws IOException {
    return Map.of(
        "tls.crt", Files.readString(issued.cert()), "tls.key", Files.readString(issued.key()));
  }

  private static String sha256(String text) throws NoSuchAlgorithmException {
    return HexFormat.of()
        .formatHex(
            MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
  }
}
