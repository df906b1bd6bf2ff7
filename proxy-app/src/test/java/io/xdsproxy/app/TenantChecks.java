package io.xdsproxy.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.xdsproxy.app.testing.Opened;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamNodes;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * What every way of deploying the proxy must get right about tenants, against a real proxy started
 * from the configuration it ships and the certificates an operator's mesh would give it: each
 * workload is served its own group's configuration, as the control plane sends it for that group's
 * node, and nothing else; a client without a certificate, or whose node claims another namespace,
 * is refused. The kustomization's test and the chart's test run it over what each renders.
 */
final class TenantChecks {

  private static final Duration WAIT = DeploymentChecks.WAIT;

  /**
   * A workload of the mesh: a namespace's service account, with its SPIFFE certificate and the node
   * its Istio sidecar sends.
   */
  record Workload(String namespace, String serviceAccount) {

    String spiffeId() {
      return MeshCertificates.spiffeId(namespace, serviceAccount);
    }

    /** The cluster the control plane serves this workload's group, and only it. */
    String clusterName() {
      return namespace + "-" + serviceAccount + "-svc";
    }

    /** The node an Istio sidecar of this workload sends, or one claiming {@code namespace}. */
    Node node(String claimedNamespace) {
      return Node.newBuilder()
          .setId(
              "sidecar~10.0.0.1~"
                  + serviceAccount
                  + "-0."
                  + claimedNamespace
                  + "~"
                  + claimedNamespace
                  + ".svc.cluster.local")
          .setCluster(serviceAccount + "." + claimedNamespace)
          .setMetadata(
              Struct.newBuilder()
                  .putFields("NAMESPACE", string(claimedNamespace))
                  .putFields("SERVICE_ACCOUNT", string(serviceAccount))
                  .putFields("ISTIO_VERSION", string("1.26.2")))
          .build();
    }

    Node node() {
      return node(namespace);
    }
  }

  static final Workload CART = new Workload("shop", "cart");
  static final Workload TELLER = new Workload("bank", "teller");

  private TenantChecks() {}

  /**
   * A real proxy started with {@code config}, before java-control-plane serving each of {@link
   * #CART}'s and {@link #TELLER}'s groups a cluster of its own, keyed by the cluster of the node
   * the config's template makes for the group ({1} its namespace, {2} its service account): each
   * workload, connecting by the Service's name {@code serviceName} with its SPIFFE certificate, is
   * sent its own cluster alone, and the control plane sees nodes istiod would take for those
   * groups; a node claiming another namespace than its certificate's gets PERMISSION_DENIED; a
   * client without a certificate, or without TLS, is refused in the handshake.
   */
  static void eachWorkloadIsServedItsOwnGroupAndOthersAreRefused(
      ProxyConfig config, MeshCertificates mesh, String serviceName) throws Exception {
    assertThat(config.tenancy().upstreamNode()).as("the config's upstream-node").isPresent();
    UpstreamNodes template = config.tenancy().upstreamNodes();
    try (Opened opened = new Opened()) {
      ControlPlane controlPlane = opened.add(new ControlPlane());
      for (Workload workload : List.of(CART, TELLER)) {
        Node groupNode =
            template.of(
                NodeGroupKey.of(List.of(workload.namespace(), workload.serviceAccount())),
                Node.getDefaultInstance());
        controlPlane.setSnapshot(
            groupNode.getCluster(),
            Snapshot.create(
                List.of(Resources.cluster(workload.clusterName())),
                List.of(),
                List.of(),
                List.of(),
                List.of(),
                "1"));
      }
      XdsProxy proxy =
          opened.add(XdsProxy.start(config.withUpstream(controlPlane.target()).withPorts(0, 0, 0)));

      for (Workload workload : List.of(CART, TELLER)) {
        var client =
            opened.add(
                client(
                    opened,
                    proxy,
                    mesh.workload(workload.namespace(), workload.serviceAccount()),
                    serviceName));
        client.send(clusters(workload.node()));
        DiscoveryResponse response = client.next(WAIT);
        assertThat(clusterNames(response))
            .as("what %s is sent; transcript:%n%s", workload.spiffeId(), client.transcript())
            .containsExactly(workload.clusterName());
      }

      Set<Node> seen = new LinkedHashSet<>();
      for (DiscoveryRequest request : controlPlane.requests()) {
        if (request.hasNode()) {
          seen.add(request.getNode());
        }
      }
      assertThat(seen).as("the nodes the control plane saw, one per group").hasSize(2);
      for (Node node : seen) {
        assertThat(IstiodNodeCheck.refusals(node))
            .as("why istiod would refuse the group's node %s", node)
            .isEmpty();
        assertThat(IstiodNodeCheck.istioVersion(node))
            .as("the Istio version of the group's node %s", node)
            .isPresent();
      }
      for (Workload workload : List.of(CART, TELLER)) {
        assertThat(seen)
            .as("group nodes istiod would take from %s", workload.spiffeId())
            .filteredOn(
                node -> IstiodNodeCheck.identityMismatch(node, workload.spiffeId()).isEmpty())
            .hasSize(1);
      }

      var claimsAnother =
          opened.add(
              client(
                  opened,
                  proxy,
                  mesh.workload(CART.namespace(), CART.serviceAccount()),
                  serviceName));
      claimsAnother.send(clusters(CART.node(TELLER.namespace())));
      Status denied = claimsAnother.awaitEnd(WAIT);
      assertThat(denied.getCode())
          .as(
              "a node of %s claiming namespace %s: %s; transcript:%n%s",
              CART.spiffeId(), TELLER.namespace(), denied, claimsAnother.transcript())
          .isEqualTo(Status.Code.PERMISSION_DENIED);
      assertThat(claimsAnother.poll()).as("what it was sent").isEmpty();
      // What XdsProxyClientsDenied (deploy/kubernetes/prometheusrule.yaml) counts.
      await()
          .atMost(WAIT)
          .untilAsserted(
              () ->
                  assertThat(DeploymentChecks.httpGet(proxy, "/metrics").body())
                      .as("the denial counted")
                      .containsPattern(
                          "(?m)^xds_downstream_denied_total\\{[^}]*reason=\"identity\"[^}]*\\} 1\\.0$"));

      var anonymous = opened.add(client(opened, proxy, mesh.withoutCertificate(), serviceName));
      anonymous.send(clusters(CART.node()));
      Status refused = anonymous.awaitEnd(WAIT);
      assertThat(refused.getCode())
          .as("a client without a certificate: %s", refused)
          .isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(anonymous.poll()).as("what it was sent").isEmpty();
      var plaintext = opened.add(XdsTestClient.sotwAds(proxy.xdsPort()));
      plaintext.send(clusters(CART.node()));
      Status status = plaintext.awaitEnd(WAIT);
      assertThat(status.getCode())
          .as("a client without TLS: %s", status)
          .isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(plaintext.poll()).as("what it was sent").isEmpty();
    }
  }

  /**
   * A SotW ADS client connecting to the proxy on loopback as to {@code serviceName}: the proxy's
   * certificate must carry that name.
   */
  private static XdsTestClient<DiscoveryRequest, DiscoveryResponse> client(
      Opened opened, XdsProxy proxy, ChannelCredentials credentials, String serviceName) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort(), credentials)
            .overrideAuthority(serviceName)
            .build();
    opened.add((AutoCloseable) channel::shutdownNow);
    return new XdsTestClient<>(
        channel, AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod());
  }

  static DiscoveryRequest clusters(Node node) {
    return DiscoveryRequest.newBuilder().setNode(node).setTypeUrl(TypeUrl.CLUSTER.url()).build();
  }

  private static List<String> clusterNames(DiscoveryResponse response)
      throws InvalidProtocolBufferException {
    List<String> names = new ArrayList<>();
    for (Any resource : response.getResourcesList()) {
      names.add(resource.unpack(Cluster.class).getName());
    }
    return names;
  }

  private static Value string(String value) {
    return Value.newBuilder().setStringValue(value).build();
  }
}
