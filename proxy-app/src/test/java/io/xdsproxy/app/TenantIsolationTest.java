package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.core.v3.DataSource;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.Secret;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.TlsCertificate;
import io.envoyproxy.envoy.service.cluster.v3.ClusterDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.secret.v3.SecretDiscoveryServiceGrpc;
import io.grpc.ChannelCredentials;
import io.grpc.Status;
import io.grpc.TlsChannelCredentials;
import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.app.testing.LoopbackChannels;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.RestPolls;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.xds.Limits;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 29, played as an attacker with a certificate of the fleet's CA (or none, on a plaintext
 * port) against the real proxy on loopback, fed by java-control-plane, which serves each tenant by
 * {@code node.cluster}: tenant {@code a} gets cluster {@code a-svc} and Secret {@code a-key},
 * tenant {@code b} cluster {@code b-svc} and Secret {@code b-key}, whose private key is {@link
 * #KEY_B}. Each attack that worked on main is refused with a status naming why, on every service
 * and variant, and nothing of b reaches a.
 */
class TenantIsolationTest {

  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final String SPIFFE_A = "spiffe://cluster.local/ns/a/sa/app";
  private static final String KEY_B = "-----BEGIN PRIVATE KEY-----tenant-b";
  private static final String NAMESPACE = "san:^spiffe://[^/]+/ns/([^/]+)/";

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  @TempDir Path dir;

  private ControlPlane controlPlane;
  private Ca ca;
  private Issued server;

  @BeforeEach
  void tenants() throws Exception {
    controlPlane = fixture.controlPlane();
    for (String tenant : List.of("a", "b")) {
      controlPlane.setSnapshot(
          tenant,
          Snapshot.create(
              List.of(Resources.cluster(tenant + "-svc")),
              List.of(),
              List.of(),
              List.of(),
              List.of(secret(tenant)),
              "1"));
    }
    ca = TestCertificates.ca("fleet", dir);
    server = ca.issue("proxy");
  }

  private static Secret secret(String tenant) {
    return Secret.newBuilder()
        .setName(tenant + "-key")
        .setTlsCertificate(
            TlsCertificate.newBuilder()
                .setPrivateKey(
                    DataSource.newBuilder()
                        .setInlineString("-----BEGIN PRIVATE KEY-----tenant-" + tenant)))
        .build();
  }

  /**
   * The README's secure setup: mutual TLS, node ids that start with the certificate's SPIFFE id,
   * and the group (the cluster the control plane serves by) bound to the SPIFFE id's namespace.
   */
  private XdsProxy secureProxy(String... key) throws IOException {
    return fixture.proxy(
        against(controlPlane.target())
            .withRestPort(0)
            .withTls(
                ServerTls.of(server.cert(), server.key())
                    .withClientCa(ca.pem())
                    .withNodeIdPattern("{san}~.*"))
            .withNodeGroupKey(List.of(key)));
  }

  private ChannelCredentials tenantA() throws IOException {
    Issued certificate = ca.issue("a", SPIFFE_A);
    return TlsChannelCredentials.newBuilder()
        .trustManager(ca.pem().toFile())
        .keyManager(certificate.cert().toFile(), certificate.key().toFile())
        .build();
  }

  private static DiscoveryRequest request(Node node, TypeUrl type, String... names) {
    return DiscoveryRequest.newBuilder()
        .setNode(node)
        .setTypeUrl(type.url())
        .addAllResourceNames(List.of(names))
        .build();
  }

  private static DeltaDiscoveryRequest deltaRequest(Node node, TypeUrl type, String... names) {
    return DeltaDiscoveryRequest.newBuilder()
        .setNode(node)
        .setTypeUrl(type.url())
        .addAllResourceNamesSubscribe(List.of(names))
        .build();
  }

  /** Every kind of stream a client may open, each sent {@code node}'s request for {@code type}. */
  private List<XdsTestClient<?, ?>> everyService(
      int port, ChannelCredentials credentials, Node node, TypeUrl type, String name) {
    var sotw = fixture.add(XdsTestClient.sotwAds(port, credentials));
    sotw.send(request(node, type, name));
    var delta = fixture.add(XdsTestClient.deltaAds(port, credentials));
    delta.send(deltaRequest(node, type, name));
    List<XdsTestClient<?, ?>> clients = new ArrayList<>(List.of(sotw, delta));
    if (type.equals(TypeUrl.SECRET)) {
      var sds =
          fixture.add(
              new XdsTestClient<>(
                  port, credentials, SecretDiscoveryServiceGrpc.getStreamSecretsMethod()));
      sds.send(request(node, type, name));
      var deltaSds =
          fixture.add(
              new XdsTestClient<>(
                  port, credentials, SecretDiscoveryServiceGrpc.getDeltaSecretsMethod()));
      deltaSds.send(deltaRequest(node, type, name));
      clients.addAll(List.of(sds, deltaSds));
    } else {
      var cds =
          fixture.add(
              new XdsTestClient<>(
                  port, credentials, ClusterDiscoveryServiceGrpc.getStreamClustersMethod()));
      cds.send(request(node, type, name));
      clients.add(cds);
    }
    return clients;
  }

  private static void assertDenied(List<XdsTestClient<?, ?>> clients, String... saying) {
    for (XdsTestClient<?, ?> client : clients) {
      Status status = client.awaitEnd(WAIT);
      assertThat(status.getCode()).as(client.transcript()).isEqualTo(Status.Code.PERMISSION_DENIED);
      assertThat(status.getDescription()).as(client.transcript()).contains(saying);
      assertThat(client.transcript().lines().filter(line -> line.startsWith("<-")))
          .as("what the proxy sent")
          .noneMatch(line -> line.contains(KEY_B) || line.contains("b-svc"));
    }
  }

  @Test
  void aClientThatNamesAnotherTenantsClusterIsDeniedOnEveryServiceAndGetsNothingOfIt()
      throws Exception {
    XdsProxy proxy = secureProxy("cluster=" + NAMESPACE);
    ChannelCredentials a = tenantA();
    Node hopping = XdsTestClient.node(SPIFFE_A + "~pod-1", "b");

    assertDenied(
        everyService(proxy.xdsPort(), a, hopping, TypeUrl.SECRET, "b-key"), "'b'", "'a'", SPIFFE_A);
    assertDenied(everyService(proxy.xdsPort(), a, hopping, TypeUrl.CLUSTER, "b-svc"), "'b'", "'a'");
    assertThat(proxy.groups().groups()).as("groups opened").isEmpty();
    assertThat(fixture.scrape()).contains("xds_downstream_denied_total{reason=\"identity\"} 7.0");

    // Its own tenant's configuration it gets, Secret and all.
    Node own = XdsTestClient.node(SPIFFE_A + "~pod-1", "a");
    var sotw = fixture.add(XdsTestClient.sotwAds(proxy.xdsPort(), a));
    sotw.send(request(own, TypeUrl.SECRET, "a-key"));
    DiscoveryResponse secrets = sotw.next(WAIT);
    assertThat(secrets.getResources(0).unpack(Secret.class).getName()).isEqualTo("a-key");
  }

  @Test
  void istiosNamespaceInTheNodeIdCannotNameAnotherTenant() throws Exception {
    XdsProxy proxy = secureProxy("id:^[^~]*~[^~]*~[^.~]*\\.([^~]+)~=" + NAMESPACE);
    // Its SAN first, as the node id pattern requires; then an Istio sidecar's id in namespace b.
    Node hopping = XdsTestClient.node(SPIFFE_A + "~10.0.0.1~pod-1.b~b.svc.cluster.local~", "b");

    assertDenied(
        everyService(proxy.xdsPort(), tenantA(), hopping, TypeUrl.SECRET, "b-key"), "'b'", "'a'");
    assertThat(proxy.groups().groups()).isEmpty();
  }

  @Test
  void mutualTlsWithAGroupTheClientChoosesIsRefusedAtStartSayingWhatToChange() throws Exception {
    String[] args = {
      "--tls-cert", server.cert().toString(),
      "--tls-key", server.key().toString(),
      "--tls-client-ca", ca.pem().toString(),
      "--tls-node-id-pattern", "{san}~.*"
    };
    assertThatThrownBy(() -> ProxyConfig.parse(args))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("[cluster]")
        .hasMessageContaining("san:")
        .hasMessageContaining("allow-client-chosen-groups");
    assertThatThrownBy(
            () ->
                XdsProxy.start(
                    against(controlPlane.target())
                        .withTls(ServerTls.of(server.cert(), server.key()).withClientCa(ca.pem()))))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("allow-client-chosen-groups");
    List<String> withOptOut = new ArrayList<>(List.of(args));
    withOptOut.addAll(List.of("--allow-client-chosen-groups", "true"));
    assertThat(ProxyConfig.parse(withOptOut.toArray(String[]::new)).tenancy().rule().toString())
        .isEqualTo("cluster");
    withOptOut.addAll(List.of("--tls-node-id-pattern", "{san}", "--node-group-key", "id:^(.*)$"));
    withOptOut.remove("--allow-client-chosen-groups");
    withOptOut.remove("true");
    assertThat(ProxyConfig.parse(withOptOut.toArray(String[]::new)).tenancy().nodeGroupKey())
        .as("a node id that is the certificate's name binds the id's parts")
        .containsExactly("id:^(.*)$");
  }

  @Test
  void anAnonymousClientThatNamesAGroupGetsNoSecretOnAnyServiceButItsOtherTypes() throws Exception {
    XdsProxy proxy = fixture.proxy(against(controlPlane.target()).withRestPort(0));
    ChannelCredentials plaintext = io.grpc.InsecureChannelCredentials.create();
    Node b = XdsTestClient.node("stranger", "b");

    assertDenied(
        everyService(proxy.xdsPort(), plaintext, b, TypeUrl.SECRET, "b-key"),
        "--tls-client-ca",
        "--secrets-to-unverified-clients");
    assertThat(fixture.scrape()).contains("xds_downstream_denied_total{reason=\"secrets\"} 4.0");
    HttpResponse<String> rest =
        RestPolls.post(
            HttpClient.newHttpClient(),
            "http",
            proxy.restPort().orElseThrow(),
            "secrets",
            "stranger",
            "b",
            "\"b-key\"");
    assertThat(rest.statusCode()).as(rest.body()).isEqualTo(403);
    assertThat(rest.body()).contains("--secrets-to-unverified-clients").doesNotContain(KEY_B);
    var clusters = fixture.add(XdsTestClient.sotwAds(proxy.xdsPort()));
    clusters.send(request(b, TypeUrl.CLUSTER));
    assertThat(clusters.next(WAIT).getResourcesCount()).isEqualTo(1);
  }

  @Test
  void secretsToUnverifiedClientsIsAnExplicitOptIn() throws Exception {
    ProxyConfig config = against(controlPlane.target());
    XdsProxy proxy =
        fixture.proxy(config.withTenancy(config.tenancy().withSecretsToUnverifiedClients(true)));
    var sds =
        fixture.add(
            new XdsTestClient<>(
                proxy.xdsPort(), SecretDiscoveryServiceGrpc.getStreamSecretsMethod()));
    sds.send(request(XdsTestClient.node("stranger", "b"), TypeUrl.SECRET, "b-key"));

    assertThat(sds.next(WAIT).getResources(0).unpack(Secret.class).getName()).isEqualTo("b-key");
  }

  /** A node of {@code cluster}, which the control plane serves by, in the proxy's group "team". */
  private static Node member(String id, String cluster) {
    return Node.newBuilder()
        .setId(id)
        .setCluster(cluster)
        .setMetadata(
            Struct.newBuilder().putFields("team", Value.newBuilder().setStringValue("t").build()))
        .build();
  }

  @Test
  void theFirstMemberDoesNotDecideWhatALaterMemberOfItsGroupIsServed() throws Exception {
    XdsProxy proxy =
        fixture.proxy(against(controlPlane.target()).withNodeGroupKey(List.of("metadata:team")));
    var first = fixture.add(XdsTestClient.sotwAds(proxy.xdsPort()));
    first.send(request(member("admin-1", "b"), TypeUrl.CLUSTER));
    assertThat(
            first
                .next(WAIT)
                .getResources(0)
                .unpack(io.envoyproxy.envoy.config.cluster.v3.Cluster.class)
                .getName())
        .isEqualTo("b-svc");

    var later = fixture.add(XdsTestClient.sotwAds(proxy.xdsPort()));
    later.send(request(member("user-1", "a"), TypeUrl.CLUSTER));
    Status refused = later.awaitEnd(WAIT);

    assertThat(refused.getCode()).as(later.transcript()).isEqualTo(Status.Code.PERMISSION_DENIED);
    assertThat(refused.getDescription())
        .contains("'user-1'", "cluster", "--upstream-node")
        .as("another member's values are not this client's to see")
        .doesNotContain("admin-1");
    assertThat(later.transcript()).doesNotContain("b-svc");
    assertThat(fixture.scrape())
        .contains("xds_downstream_denied_total{reason=\"upstream_node\"} 1.0");
  }

  @Test
  void withATemplateTheGroupIsSeenUpstreamAsItsOwnNodeWhoeverComesFirst() throws Exception {
    Path template = Files.writeString(dir.resolve("node.yaml"), "id: 'group-{1}'\ncluster: a\n");
    ProxyConfig config = against(controlPlane.target()).withNodeGroupKey(List.of("metadata:team"));
    XdsProxy proxy = fixture.proxy(config.withTenancy(config.tenancy().withUpstreamNode(template)));

    for (Node member : List.of(member("admin-1", "b"), member("user-1", "a"))) {
      var client = fixture.add(XdsTestClient.sotwAds(proxy.xdsPort()));
      client.send(request(member, TypeUrl.CLUSTER));
      assertThat(
              client
                  .next(WAIT)
                  .getResources(0)
                  .unpack(io.envoyproxy.envoy.config.cluster.v3.Cluster.class)
                  .getName())
          .as("what %s is served", member.getId())
          .isEqualTo("a-svc");
    }
    assertThat(controlPlane.streamNodeIds()).containsExactly("group-t");
  }

  /** A SotW ADS client whose connection comes from {@code address}, a loopback address. */
  private XdsTestClient<DiscoveryRequest, DiscoveryResponse> from(String address, int port) {
    return fixture.add(
        new XdsTestClient<>(
            LoopbackChannels.from(fixture, address, port),
            AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod()));
  }

  @Test
  void oneAddressOpensNoMoreGroupsThanItsShareAndAnotherAddressIsServedMeanwhile()
      throws Exception {
    for (String cluster : List.of("flood-0", "flood-1", "flood-2", "c")) {
      controlPlane.setSnapshot(cluster, Resources.clustersAt(1, "1", cluster + "-svc"));
    }
    XdsProxy proxy =
        fixture.proxy(
            against(controlPlane.target())
                .withLimits(Limits.DEFAULTS.withMaxNodeGroupsPerClient(3).withMaxNodeGroups(5)));
    List<Status> flood = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      var client = from("127.0.0.1", proxy.xdsPort());
      client.send(request(XdsTestClient.node("flood-" + i, "flood-" + i), TypeUrl.CLUSTER));
      if (i < 3) {
        client.next(WAIT);
      } else {
        flood.add(client.awaitEnd(WAIT));
      }
    }
    assertThat(flood)
        .allSatisfy(
            status -> {
              assertThat(status.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
              assertThat(status.getDescription())
                  .contains("address 127.0.0.1", "--max-node-groups-per-client");
            });

    var other = from("127.0.0.2", proxy.xdsPort());
    other.send(request(XdsTestClient.node("other", "a"), TypeUrl.CLUSTER));
    assertThat(other.next(WAIT).getResourcesCount()).isEqualTo(1);
    var joining = from("127.0.0.1", proxy.xdsPort());
    joining.send(request(XdsTestClient.node("flood-again", "flood-0"), TypeUrl.CLUSTER));
    assertThat(joining.nextUnlessEnded(WAIT))
        .as("a group already open is joined, whoever opened it")
        .isPresent();
    assertThat(proxy.groups().groups()).hasSize(4);
    assertThat(fixture.scrape())
        .contains("xds_downstream_limited_total{limit=\"node_groups_per_client\"} 2.0");

    var third = from("127.0.0.3", proxy.xdsPort());
    third.send(request(XdsTestClient.node("third", "c"), TypeUrl.CLUSTER));
    third.next(WAIT);
    var fourth = from("127.0.0.4", proxy.xdsPort());
    fourth.send(request(XdsTestClient.node("fourth", "d"), TypeUrl.CLUSTER));
    Status full = fourth.awaitEnd(WAIT);
    assertThat(full.getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(full.getDescription()).contains("5 node groups", "--max-node-groups");
    assertThat(Optional.of(proxy.groups().groups().size())).contains(5);
  }
}
