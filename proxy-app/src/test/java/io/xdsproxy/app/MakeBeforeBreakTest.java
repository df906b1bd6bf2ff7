package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.serving;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * "Eventual consistency considerations" on ADS: when a route moves from cluster x to a new cluster
 * y in one change, the client gets y before the route, and loses x only after it. The change comes
 * as a Kubernetes ConfigMap update does: every file of the resources directory swapped at once.
 */
class MakeBeforeBreakTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final Duration QUIET = Duration.ofMillis(700);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @TempDir Path resources;

  private XdsProxy proxy;

  /** The directory's files are links into ..data, as a ConfigMap volume lays them out. */
  @BeforeEach
  void start() throws Exception {
    writeVersion("v1", "x");
    Files.createSymbolicLink(resources.resolve("..data"), Path.of("v1"));
    for (String file : new String[] {"clusters.yaml", "routes.yaml"}) {
      Files.createSymbolicLink(resources.resolve(file), Path.of("..data", file));
    }
    proxy = fixture.proxy(serving(resources));
  }

  /** A version of the configuration: one cluster, and route r pointing at it. */
  private void writeVersion(String version, String cluster) throws Exception {
    Path dir = Files.createDirectories(resources.resolve(version));
    Files.writeString(
        dir.resolve("clusters.yaml"),
        """
        resources:
        - "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
          name: %s
          type: EDS
          eds_cluster_config: { eds_config: { ads: {} } }
        """
            .formatted(cluster));
    Files.writeString(
        dir.resolve("routes.yaml"),
        """
        resources:
        - "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
          name: r
          virtual_hosts:
          - name: all
            domains: ["*"]
            routes: [ { match: { prefix: "" }, route: { cluster: %s } } ]
        """
            .formatted(cluster));
  }

  /** Swaps every file at once: ..data is relinked by a rename, which is atomic. */
  private void switchTo(String version) throws Exception {
    Path link = Files.createSymbolicLink(resources.resolve("..data_tmp"), Path.of(version));
    Files.move(
        link,
        resources.resolve("..data"),
        StandardCopyOption.ATOMIC_MOVE,
        StandardCopyOption.REPLACE_EXISTING);
  }

  private static String routeTarget(RouteConfiguration route) {
    return route.getVirtualHosts(0).getRoutes(0).getRoute().getCluster();
  }

  @Test
  void sotwAdsGetsTheNewClusterThenTheRouteThenLosesTheOldCluster() throws Exception {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.ROUTE.url())
              .addResourceNames("r")
              .build());
      client.next(WAIT);
      client.next(WAIT);

      writeVersion("v2", "y");
      switchTo("v2");

      DiscoveryResponse made = client.next(WAIT);
      DiscoveryResponse routed = client.next(WAIT);
      DiscoveryResponse broken = client.next(WAIT);
      assertThat(made.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
      assertThat(made.getResourcesList())
          .extracting(any -> any.unpack(Cluster.class).getName())
          .containsExactlyInAnyOrder("x", "y");
      assertThat(routed.getTypeUrl()).isEqualTo(TypeUrl.ROUTE.url());
      assertThat(routeTarget(routed.getResources(0).unpack(RouteConfiguration.class)))
          .isEqualTo("y");
      assertThat(broken.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
      assertThat(broken.getResourcesList())
          .extracting(any -> any.unpack(Cluster.class).getName())
          .containsExactly("y");
      client.expectNoResponse(QUIET);
    }
  }

  @Test
  void deltaAdsGetsTheNewClusterThenTheRouteThenTheRemovalOfTheOldCluster() throws Exception {
    try (var client = XdsTestClient.deltaAds(proxy.xdsPort())) {
      client.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      client.send(
          DeltaDiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.ROUTE.url())
              .addResourceNamesSubscribe("r")
              .build());
      client.next(WAIT);
      client.next(WAIT);

      writeVersion("v2", "y");
      switchTo("v2");

      DeltaDiscoveryResponse made = client.next(WAIT);
      DeltaDiscoveryResponse routed = client.next(WAIT);
      DeltaDiscoveryResponse broken = client.next(WAIT);
      assertThat(made.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
      assertThat(made.getResourcesList()).extracting(Resource::getName).containsExactly("y");
      assertThat(made.getRemovedResourcesList()).isEmpty();
      assertThat(routed.getTypeUrl()).isEqualTo(TypeUrl.ROUTE.url());
      assertThat(routeTarget(routed.getResources(0).getResource().unpack(RouteConfiguration.class)))
          .isEqualTo("y");
      assertThat(broken.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
      assertThat(broken.getRemovedResourcesList()).containsExactly("x");
      assertThat(broken.getResourcesList()).isEmpty();
    }
  }
}
