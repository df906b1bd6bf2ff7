package io.xdsproxy.app;

import static io.xdsproxy.app.testing.Yamls.cast;
import static io.xdsproxy.app.testing.Yamls.get;
import static io.xdsproxy.app.testing.Yamls.list;
import static io.xdsproxy.app.testing.Yamls.map;
import static io.xdsproxy.app.testing.Yamls.str;
import static io.xdsproxy.app.testing.Yamls.strings;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What every way of deploying the proxy (the kustomization, the Helm chart) must get right about
 * the pods, against the configuration the pod's proxy parses: ports, probes, drain timing, and the
 * objects that point at the pods. The kustomization's test and the chart's test run the same checks
 * over what each renders.
 */
final class DeploymentChecks {

  static final Duration WAIT = Duration.ofSeconds(15);

  private DeploymentChecks() {}

  /**
   * The config's {@code --state-dir} is on a volume of its own the container may write, and returns
   * that volume: an emptyDir (outlives a crash of the container) or a claim (outlives the pod); not
   * the scratch space of /tmp, nor the read-only config.
   */
  static Map<String, Object> stateVolume(DeployedPod pod, ProxyConfig config) {
    assertThat(config.stateDir()).as("--state-dir").isPresent();
    Map<String, Object> holding = null;
    for (Object item : list(pod.container(), "volumeMounts")) {
      Map<String, Object> mount = cast(item);
      if (config.stateDir().get().startsWith(pod.file((String) mount.get("mountPath")))) {
        holding = mount;
      }
    }
    assertThat(holding)
        .as("the volume mount holding --state-dir %s", config.stateDir())
        .isNotNull();
    assertThat(holding.get("readOnly"))
        .as("the state volume's mount is writable")
        .isNotEqualTo(true);
    assertThat(holding.get("name")).isEqualTo("state");
    Map<String, Object> volume = pod.volume("state");
    assertThat(volume.containsKey("emptyDir") || volume.containsKey("persistentVolumeClaim"))
        .as("the state volume %s: an emptyDir or a claim", volume)
        .isTrue();
    assertThat(config.stateIncludeSecrets()).as("Secrets kept on disk only when asked").isFalse();
    return volume;
  }

  /**
   * The container exposes the config's xDS and monitoring ports (and REST port, if set) and no
   * other, the probes ask the monitoring port for {@code /healthz} and {@code /readyz}, preStop
   * sleeps with the kubelet's own action, and the grace period outlasts preStop plus drain-time.
   */
  static void portsProbesAndDrain(DeployedPod pod, ProxyConfig config) {
    Map<String, Object> container = pod.container();
    Set<Integer> expected = new LinkedHashSet<>(List.of(config.xdsPort(), config.monitoringPort()));
    config.restPort().ifPresent(expected::add);
    assertThat(pod.containerPorts().values())
        .as("container ports (the admin port %s is not one)", config.adminPort())
        .containsExactlyInAnyOrderElementsOf(expected);
    assertThat(str(container, "livenessProbe", "httpGet", "path")).isEqualTo("/healthz");
    assertThat(str(container, "readinessProbe", "httpGet", "path")).isEqualTo("/readyz");
    for (String probe : List.of("livenessProbe", "readinessProbe", "startupProbe")) {
      if (container.containsKey(probe)) {
        assertThat(pod.port(get(container, probe, "httpGet", "port")))
            .as("%s's port", probe)
            .isEqualTo(config.monitoringPort());
      }
    }

    // On SIGTERM the pod sleeps in preStop, then the proxy drains for drain-time, then exits.
    assertThat(map(container, "lifecycle", "preStop"))
        .as("preStop: the kubelet's sleep action, nothing run in the image")
        .containsOnlyKeys("sleep");
    int preStopSeconds = (Integer) get(container, "lifecycle", "preStop", "sleep", "seconds");
    assertThat(preStopSeconds).as("preStop's sleep").isPositive();
    int grace = (Integer) get(pod.pod(), "spec", "terminationGracePeriodSeconds");
    assertThat(Duration.ofSeconds(grace))
        .as(
            "terminationGracePeriodSeconds against preStop %ss and drain-time %s",
            preStopSeconds, config.drainTime())
        .isGreaterThan(config.drainTime().plusSeconds(preStopSeconds));

    Map<String, Object> podLabels = map(pod.pod(), "metadata", "labels");
    assertThat(podLabels)
        .containsAllEntriesOf(map(pod.deployment(), "spec", "selector", "matchLabels"));
  }

  /**
   * Each TLS file the config file names is in a Secret's or ConfigMap's volume mounted read-only as
   * a directory, never with subPath: the kubelet updates a mounted volume's files when its Secret
   * is renewed (a subPath's never), and the proxy re-reads them.
   */
  static void tlsFilesFromVolumesWithoutSubPath(DeployedPod pod) {
    Map<String, Object> keys = pod.configKeys();
    for (String key :
        List.of(
            "tls-cert",
            "tls-key",
            "tls-client-ca",
            "upstream-ca",
            "upstream-cert",
            "upstream-key")) {
      if (!keys.containsKey(key)) {
        continue;
      }
      String file = String.valueOf(keys.get(key));
      Map<String, Object> holding = null;
      for (Object item : list(pod.container(), "volumeMounts")) {
        Map<String, Object> mount = cast(item);
        if (file.startsWith(mount.get("mountPath") + "/")) {
          holding = mount;
        }
      }
      assertThat(holding).as("the volume mount holding %s %s", key, file).isNotNull();
      assertThat(holding)
          .as("the mount of %s: read-only, without subPath, so that renewals reach the proxy", key)
          .containsEntry("readOnly", true)
          .doesNotContainKey("subPath");
      Map<String, Object> volume = pod.volume((String) holding.get("name"));
      assertThat(volume.containsKey("secret") || volume.containsKey("configMap"))
          .as("%s's volume %s: a Secret's or a ConfigMap's", key, volume)
          .isTrue();
    }
  }

  /** The Prometheus annotations, where the pod has them, name the monitoring port's /metrics. */
  static void scrapeAnnotations(DeployedPod pod, ProxyConfig config) {
    assertThat(map(pod.pod(), "metadata", "annotations"))
        .containsEntry("prometheus.io/scrape", "true")
        .containsEntry("prometheus.io/port", String.valueOf(config.monitoringPort()))
        .containsEntry("prometheus.io/path", "/metrics");
  }

  /**
   * The Service selects the pods and forwards to the config's xDS and monitoring ports (and REST,
   * if set), the xDS port as gRPC; returns its ports by name, as they reach the pod.
   */
  static Map<String, Integer> service(
      DeployedPod pod, ProxyConfig config, Map<String, Object> service) {
    Map<String, Object> podLabels = map(pod.pod(), "metadata", "labels");
    assertThat(podLabels)
        .as("pods the Service selects")
        .containsAllEntriesOf(map(service, "spec", "selector"));
    Map<String, Integer> servicePorts = new LinkedHashMap<>();
    for (Object item : list(service, "spec", "ports")) {
      Map<String, Object> servicePort = cast(item);
      int target = pod.port(servicePort.get("targetPort"));
      assertThat(pod.containerPorts().values())
          .as("Service port %s's targetPort", servicePort.get("name"))
          .contains(target);
      servicePorts.put((String) servicePort.get("name"), target);
      if (target == config.xdsPort()) {
        assertThat(servicePort).as("the xDS port").containsEntry("appProtocol", "grpc");
      }
    }
    Set<Integer> expected = new LinkedHashSet<>(List.of(config.xdsPort(), config.monitoringPort()));
    config.restPort().ifPresent(expected::add);
    assertThat(servicePorts.values()).containsExactlyInAnyOrderElementsOf(expected);
    return servicePorts;
  }

  /** The ServiceMonitor selects the Service and scrapes /metrics on the monitoring port. */
  static void serviceMonitor(
      ProxyConfig config,
      Map<String, Object> service,
      Map<String, Integer> servicePorts,
      Map<String, Object> monitor) {
    assertThat(map(service, "metadata", "labels"))
        .as("the Service the ServiceMonitor selects")
        .containsAllEntriesOf(map(monitor, "spec", "selector", "matchLabels"));
    for (Object item : list(monitor, "spec", "endpoints")) {
      Map<String, Object> endpoint = cast(item);
      assertThat(servicePorts)
          .as("the Service's ports by name")
          .containsKey((String) endpoint.get("port"));
      assertThat(servicePorts.get(endpoint.get("port")))
          .as("the scraped port")
          .isEqualTo(config.monitoringPort());
      assertThat(endpoint).containsEntry("path", "/metrics");
    }
  }

  /**
   * One replica at a time, and an unready one always: when no replica can reach the control plane,
   * unready replicas must not block node drains.
   */
  static void podDisruptionBudget(DeployedPod pod, Map<String, Object> pdb) {
    assertThat(map(pod.pod(), "metadata", "labels"))
        .as("pods the PodDisruptionBudget selects")
        .containsAllEntriesOf(map(pdb, "spec", "selector", "matchLabels"));
    assertThat(map(pdb, "spec"))
        .containsEntry("maxUnavailable", 1)
        .containsEntry("unhealthyPodEvictionPolicy", "AlwaysAllow");
  }

  /**
   * The NetworkPolicy selects the pods, restricts their ingress, and lets in the config's xDS port
   * (and REST port) from client namespaces and the monitoring port from Prometheus's: no other
   * port, the admin port least of all. Returns the ports each rule allows.
   */
  static Map<Integer, Map<String, Object>> networkPolicy(
      DeployedPod pod, ProxyConfig config, Map<String, Object> policy) {
    assertThat(map(pod.pod(), "metadata", "labels"))
        .as("pods the NetworkPolicy selects")
        .containsAllEntriesOf(map(policy, "spec", "podSelector", "matchLabels"));
    assertThat(list(policy, "spec", "policyTypes"))
        .as("what the NetworkPolicy restricts")
        .contains("Ingress");
    Map<Integer, Map<String, Object>> ruleByPort = new LinkedHashMap<>();
    for (Object item : list(policy, "spec", "ingress")) {
      Map<String, Object> rule = cast(item);
      assertThat(list(rule, "from")).as("an ingress rule's peers: never everyone").isNotEmpty();
      for (Object port : list(rule, "ports")) {
        assertThat(map(port)).containsEntry("protocol", "TCP");
        ruleByPort.put(pod.port(get(port, "port")), rule);
      }
    }
    Set<Integer> expected = new LinkedHashSet<>(List.of(config.xdsPort(), config.monitoringPort()));
    config.restPort().ifPresent(expected::add);
    assertThat(ruleByPort.keySet())
        .as("ports the NetworkPolicy lets in")
        .containsExactlyInAnyOrderElementsOf(expected)
        .doesNotContain(config.adminPort());
    assertThat(ruleByPort.get(config.xdsPort()))
        .as("who may reach the xDS port")
        .isNotSameAs(ruleByPort.get(config.monitoringPort()));
    config
        .restPort()
        .ifPresent(
            rest ->
                assertThat(ruleByPort.get(rest))
                    .as("REST-JSON clients are xDS clients")
                    .isSameAs(ruleByPort.get(config.xdsPort())));
    return ruleByPort;
  }

  /**
   * Replicas spread over zones and nodes (the selectors find the pods), and the container asks for
   * the CPU and memory the scheduler places it by.
   */
  static void spreadAndResources(DeployedPod pod) {
    Map<String, Object> podLabels = map(pod.pod(), "metadata", "labels");
    assertThat(list(pod.pod(), "spec", "topologySpreadConstraints"))
        .as("topology spread constraints")
        .isNotEmpty();
    for (Object constraint : list(pod.pod(), "spec", "topologySpreadConstraints")) {
      assertThat(podLabels).containsAllEntriesOf(map(constraint, "labelSelector", "matchLabels"));
    }
    for (Object term :
        list(
            pod.pod(),
            "spec",
            "affinity",
            "podAntiAffinity",
            "preferredDuringSchedulingIgnoredDuringExecution")) {
      assertThat(podLabels)
          .containsAllEntriesOf(map(term, "podAffinityTerm", "labelSelector", "matchLabels"));
    }
    assertThat(map(pod.container(), "resources", "requests")).containsKeys("cpu", "memory");
    assertThat(map(pod.container(), "resources", "limits")).containsKey("memory");
  }

  /**
   * The container runs as non-root user {@code user} on a read-only root filesystem, without
   * capabilities.
   */
  static void securityContext(DeployedPod pod, int user) {
    Map<String, Object> podSecurity = map(pod.pod(), "spec", "securityContext");
    Map<String, Object> security = map(pod.container(), "securityContext");
    assertThat(podSecurity).containsEntry("runAsNonRoot", true);
    assertThat(podSecurity.get("runAsUser"))
        .as("the pod's runAsUser is the image's USER")
        .isEqualTo(user);
    assertThat(security)
        .containsEntry("readOnlyRootFilesystem", true)
        .containsEntry("allowPrivilegeEscalation", false);
    assertThat(strings(security, "capabilities", "drop")).contains("ALL");
  }

  /** Every probe of the container answers 200 from {@code proxy}'s monitoring port. */
  static void probesAnswer(DeployedPod pod, XdsProxy proxy) {
    Map<String, Object> container = pod.container();
    for (String probe : List.of("livenessProbe", "readinessProbe", "startupProbe")) {
      if (container.containsKey(probe)) {
        String path = str(container, probe, "httpGet", "path");
        await()
            .atMost(WAIT)
            .untilAsserted(
                () ->
                    assertThat(httpGet(proxy, path).statusCode())
                        .as("GET %s", path)
                        .isEqualTo(200));
      }
    }
  }

  /** A GET on the proxy's monitoring port. */
  static HttpResponse<String> httpGet(XdsProxy proxy, String path)
      throws IOException, InterruptedException {
    return HttpClient.newHttpClient()
        .send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.monitoringPort() + path))
                .timeout(WAIT)
                .build(),
            HttpResponse.BodyHandlers.ofString());
  }
}
