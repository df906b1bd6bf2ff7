package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.serving;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.envoyproxy.envoy.service.route.v3.VirtualHostDiscoveryServiceGrpc;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * "Resource names": a client may subscribe to a resource by one of its aliases, as Envoy's VHDS
 * does with {@code <route configuration>/<host>}; the answer names the resource and its aliases.
 */
class AliasTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @TempDir Path resources;

  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    Files.writeString(
        resources.resolve("vhosts.yaml"),
        """
        type_url: type.googleapis.com/envoy.config.route.v3.VirtualHost
        resources:
        - "@type": type.googleapis.com/envoy.service.discovery.v3.Resource
          name: routes/shop
          aliases: ["routes/shop.example.com", "routes/www.shop.example.com"]
          resource:
            "@type": type.googleapis.com/envoy.config.route.v3.VirtualHost
            name: routes/shop
            domains: ["shop.example.com", "www.shop.example.com"]
        """);
    proxy = fixture.proxy(serving(resources));
  }

  @Test
  void aVirtualHostSubscribedByAnAliasIsSentUnderItsNameWithItsAliases() throws Exception {
    try (var vhds =
        new XdsTestClient<>(
            proxy.xdsPort(), VirtualHostDiscoveryServiceGrpc.getDeltaVirtualHostsMethod())) {
      vhds.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.VIRTUAL_HOST.url())
              .addResourceNamesSubscribe("routes/www.shop.example.com")
              .build());

      DeltaDiscoveryResponse response = vhds.next(WAIT);

      Resource resource = response.getResources(0);
      assertThat(resource.getName()).isEqualTo("routes/shop");
      assertThat(resource.getAliasesList()).contains("routes/www.shop.example.com");
      assertThat(resource.getResource().unpack(VirtualHost.class).getDomainsList())
          .contains("www.shop.example.com");
    }
  }

  @Test
  void anAliasNothingHasIsReportedRemovedByThatAlias() {
    try (var vhds =
        new XdsTestClient<>(
            proxy.xdsPort(), VirtualHostDiscoveryServiceGrpc.getDeltaVirtualHostsMethod())) {
      vhds.send(
          DeltaDiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.VIRTUAL_HOST.url())
              .addResourceNamesSubscribe("routes/nowhere.example.com")
              .build());

      DeltaDiscoveryResponse response = vhds.next(WAIT);

      assertThat(response.getResourcesList()).isEmpty();
      assertThat(response.getRemovedResourcesList()).containsExactly("routes/nowhere.example.com");
    }
  }
}
