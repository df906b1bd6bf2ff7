package io.xdsproxy.app.testing;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonArray;
import com.google.gson.JsonParser;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.app.ProxyConfig;
import io.xdsproxy.app.XdsProxy;
import io.xdsproxy.app.testing.VariantClient.Variant;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.ScriptedControlPlane;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.Set;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What an end-to-end test stands up: a control plane (java-control-plane, a scripted one, or one of
 * a {@link ControlPlaneCell}), a proxy started against it, clients of that proxy, and its HTTP
 * listeners ({@link #scrape()}, {@link #get(String)}). Everything it opens is closed after the
 * test, last opened first: the clients, then the proxy, then the control plane.
 *
 * <p>A JUnit extension rather than a try-with-resources builder, because most tests either share
 * one setup (made in {@code @BeforeEach}) or pick the control plane per parameter (a {@code
 * ControlPlaneCell}): either way the test opens what it needs when it knows it, and nobody writes
 * the teardown. Register it on an instance field:
 *
 * <pre>{@code
 * @RegisterExtension final ProxyFixture fixture = new ProxyFixture();
 * }</pre>
 *
 * A client whose closing is part of what a test checks is still opened in the test's own {@code
 * try}: the fixture's clients live until the test ends.
 */
public final class ProxyFixture implements AfterEachCallback, AutoCloseable {

  /**
   * The paths served on the admin listener; everything else (metrics, health) is on the monitoring
   * one.
   */
  private static final Set<String> ADMIN_PATHS = Set.of("/clients", "/config_dump", "/logging");

  private final Opened opened = new Opened();
  private XdsProxy proxy;

  /** A proxy config listening on free ports, fed by the control plane at {@code target}. */
  public static ProxyConfig against(String target) {
    return ProxyConfig.DEFAULTS.withUpstream(target).withPorts(0, 0, 0);
  }

  /**
   * A proxy config listening on free ports, fed by {@code controlPlane} over {@code cell}'s
   * upstream variant.
   */
  public static ProxyConfig against(ControlPlaneCell cell, UpstreamControlPlane controlPlane) {
    return against(controlPlane.target()).withUpstreamProtocol(cell.upstream());
  }

  /** A proxy config listening on free ports, serving the resource files in {@code directory}. */
  public static ProxyConfig serving(Path directory) {
    return ProxyConfig.DEFAULTS.withResourcesDir(directory).withPorts(0, 0, 0);
  }

  /** A java-control-plane, serving on a loopback port. */
  public ControlPlane controlPlane() throws IOException {
    return add(new ControlPlane());
  }

  /** A control plane of {@code cell}'s kind. */
  public UpstreamControlPlane controlPlane(ControlPlaneCell cell) throws IOException {
    return add(cell.create());
  }

  /** A control plane the test answers request by request. */
  public ScriptedControlPlane scriptedControlPlane() throws IOException {
    return add(new ScriptedControlPlane());
  }

  /**
   * A proxy started with {@code config}; from now on the one the clients and HTTP calls below go
   * to.
   */
  public XdsProxy proxy(ProxyConfig config) throws IOException {
    proxy = add(XdsProxy.start(config));
    return proxy;
  }

  /** The proxy started last. */
  public XdsProxy proxy() {
    if (proxy == null) {
      throw new IllegalStateException("no proxy started yet");
    }
    return proxy;
  }

  /** A SotW ADS client of the proxy. */
  public XdsTestClient<DiscoveryRequest, DiscoveryResponse> sotwAds() {
    return add(XdsTestClient.sotwAds(proxy().xdsPort()));
  }

  /** A Delta ADS client of the proxy. */
  public XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> deltaAds() {
    return add(XdsTestClient.deltaAds(proxy().xdsPort()));
  }

  /** A client of the proxy speaking {@code variant} as {@code node}. */
  public VariantClient client(Variant variant, Node node) {
    return add(new VariantClient(variant, proxy().xdsPort(), node));
  }

  /** grpc-java's own xDS client, fed by the proxy, calling {@code service}. */
  public XdsClientChannel grpcClient(String nodeId, String nodeCluster, String service) {
    return add(new XdsClientChannel(proxy().xdsPort(), nodeId, nodeCluster, service));
  }

  /** {@code closeable}, to be closed with the rest. */
  public <T extends AutoCloseable> T add(T closeable) {
    return opened.add(closeable);
  }

  /** {@code GET /metrics} of the proxy: its Prometheus text. */
  public String scrape() {
    return scrape(proxy());
  }

  /** {@code GET /metrics} of {@code proxy}, checked to be Prometheus text. */
  public static String scrape(XdsProxy proxy) {
    HttpResponse<String> response = get(proxy, "/metrics");
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.headers().firstValue("Content-Type"))
        .hasValueSatisfying(type -> assertThat(type).startsWith("text/plain"));
    return response.body();
  }

  /** {@code GET path} of the proxy, on the listener that serves it. */
  public HttpResponse<String> get(String path) {
    return get(proxy(), path);
  }

  /**
   * {@code GET path} of {@code proxy}: on the admin listener for its paths, else the monitoring
   * one.
   */
  public static HttpResponse<String> get(XdsProxy proxy, String path) {
    String bare = path.replaceFirst("\\?.*", "");
    int port = ADMIN_PATHS.contains(bare) ? proxy.adminPort() : proxy.monitoringPort();
    try {
      return HttpClient.newHttpClient()
          .send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
              HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** The streams the proxy lists at {@code GET /clients}. */
  public JsonArray clients() {
    return clients(proxy());
  }

  /** The streams {@code proxy} lists at {@code GET /clients}. */
  public static JsonArray clients(XdsProxy proxy) {
    HttpResponse<String> response = get(proxy, "/clients");
    assertThat(response.statusCode()).isEqualTo(200);
    return JsonParser.parseString(response.body()).getAsJsonObject().getAsJsonArray("clients");
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    close();
  }

  @Override
  public void close() throws Exception {
    proxy = null;
    opened.close();
  }
}
