package io.xdsproxy.app;

import com.google.gson.Gson;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.core.NodeGroupRule;
import io.xdsproxy.core.UpstreamNodes;
import io.xdsproxy.downstream.xds.Access;
import io.xdsproxy.downstream.xds.ClientStatusAccess;
import io.xdsproxy.downstream.xds.NodeIdPattern;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * How clients are put into node groups, what the control plane sees of a group, and who is entitled
 * to what (DESIGN invariant 11): the settings that keep tenants apart, checked together against the
 * xDS port's TLS ({@link #check}).
 *
 * @param nodeGroupKey the parts of a client's node and certificate that make its node-group key
 *     ({@link NodeGroupRule})
 * @param upstreamNodeId without {@code upstreamNode}: the upstream sees each group as its first
 *     client's node with this id, in which {@code {group}} and {@code {id}} are replaced; empty:
 *     the id unchanged
 * @param upstreamNode a file holding the node the upstream sees for each group, made from the
 *     group's key ({@link UpstreamNodes#template}); empty: the first client's ({@link
 *     UpstreamNodes#firstMember})
 * @param allowClientChosenGroups with client certificates required: let node-group key parts that
 *     no certificate binds stand, so that a client may join any group it names
 * @param secretsToUnverifiedClients serve Secrets to clients whose group is not bound to a verified
 *     certificate too
 * @param clientStatusAdmins certificate names whose holders client status (CSDS) on the xDS port
 *     tells of every stream, not only of their own ({@link ClientStatusAccess})
 */
public record Tenancy(
    List<String> nodeGroupKey,
    Optional<String> upstreamNodeId,
    Optional<Path> upstreamNode,
    boolean allowClientChosenGroups,
    boolean secretsToUnverifiedClients,
    List<String> clientStatusAdmins) {

  public static final Tenancy DEFAULTS =
      new Tenancy(List.of("cluster"), Optional.empty(), Optional.empty(), false, false, List.of());

  public Tenancy {
    nodeGroupKey = List.copyOf(nodeGroupKey);
    clientStatusAdmins = List.copyOf(clientStatusAdmins);
  }

  public Tenancy withNodeGroupKey(List<String> parts) {
    return new Tenancy(
        parts,
        upstreamNodeId,
        upstreamNode,
        allowClientChosenGroups,
        secretsToUnverifiedClients,
        clientStatusAdmins);
  }

  public Tenancy withUpstreamNodeId(String template) {
    return new Tenancy(
        nodeGroupKey,
        Optional.of(template),
        upstreamNode,
        allowClientChosenGroups,
        secretsToUnverifiedClients,
        clientStatusAdmins);
  }

  public Tenancy withUpstreamNode(Path file) {
    return new Tenancy(
        nodeGroupKey,
        upstreamNodeId,
        Optional.of(file),
        allowClientChosenGroups,
        secretsToUnverifiedClients,
        clientStatusAdmins);
  }

  public Tenancy withClientChosenGroups(boolean allow) {
    return new Tenancy(
        nodeGroupKey,
        upstreamNodeId,
        upstreamNode,
        allow,
        secretsToUnverifiedClients,
        clientStatusAdmins);
  }

  public Tenancy withSecretsToUnverifiedClients(boolean serve) {
    return new Tenancy(
        nodeGroupKey,
        upstreamNodeId,
        upstreamNode,
        allowClientChosenGroups,
        serve,
        clientStatusAdmins);
  }

  public Tenancy withClientStatusAdmins(List<String> names) {
    return new Tenancy(
        nodeGroupKey,
        upstreamNodeId,
        upstreamNode,
        allowClientChosenGroups,
        secretsToUnverifiedClients,
        names);
  }

  public NodeGroupRule rule() {
    return NodeGroupRule.of(nodeGroupKey);
  }

  /**
   * The key parts a client chooses freely under {@code tls}: those no certificate binds (an {@code
   * id:} part is bound when the node id pattern is {@code {san}} alone).
   */
  List<String> claimedParts(ServerTls tls) {
    boolean wholeIdProven =
        tls.nodeIdPattern().map(NodeIdPattern::new).map(NodeIdPattern::provesWholeId).orElse(false);
    return rule().claimedParts(wholeIdProven);
  }

  /**
   * Refuses a configuration that requires client certificates yet lets clients choose their group:
   * a certificate of the CA would then reach every group's configuration, Secrets included.
   */
  void check(ServerTls tls) throws ConfigException {
    if (upstreamNode.isPresent() && upstreamNodeId.isPresent()) {
      throw new ConfigException(
          "upstream-node and upstream-node-id are both given: the template's id is the one the"
              + " upstream sees, so give the id there");
    }
    if (!clientStatusAdmins.isEmpty() && tls.clientCa().isEmpty()) {
      throw new ConfigException(
          "client-status-admin names client certificates, yet without tls-client-ca no client"
              + " presents one: give tls-client-ca, or reach client status from the pod itself"
              + " (127.0.0.1 or ::1, kubectl port-forward)");
    }
    if (tls.clientCa().isEmpty() || allowClientChosenGroups) {
      return;
    }
    List<String> claimed = claimedParts(tls);
    if (!claimed.isEmpty()) {
      throw new ConfigException(
          "node-group-key part(s) "
              + claimed
              + " are chosen by the client, yet tls-client-ca requires client certificates: any"
              + " certificate of the CA could join any group. Bind each part to the certificate"
              + " ('san:<regex>', such as san:^spiffe://[^/]+/ns/([^/]+)/ for the namespace of a"
              + " SPIFFE id, or '<part>=san:<regex>' to also check the node's claim), or set"
              + " allow-client-chosen-groups true to accept that clients choose their group");
    }
  }

  /** Who may be served what on the xDS and REST ports. */
  Access access(ServerTls tls) {
    return new Access(
        tls.nodeIdPattern().map(NodeIdPattern::new),
        tls.clientCa().isPresent() && claimedParts(tls).isEmpty(),
        secretsToUnverifiedClients);
  }

  /** Whose streams a caller of client status (CSDS) on the xDS port is told of. */
  ClientStatusAccess clientStatusAccess() {
    return new ClientStatusAccess(Set.copyOf(clientStatusAdmins));
  }

  /**
   * The node the upstream sees for each group.
   *
   * @throws IOException naming the template file that cannot be read or is not a Node
   */
  UpstreamNodes upstreamNodes() throws IOException {
    if (upstreamNode.isEmpty()) {
      return UpstreamNodes.firstMember(upstreamNodeId);
    }
    return UpstreamNodes.template(readNode(upstreamNode.get()));
  }

  /** A Node in proto3 JSON, or the same in YAML. */
  static Node readNode(Path file) throws IOException {
    String text = Files.readString(file);
    Node.Builder node = Node.newBuilder();
    try {
      Object tree = new Yaml(new SafeConstructor(new LoaderOptions())).load(text);
      JsonFormat.parser().merge(new Gson().toJson(tree), node);
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      throw new IOException(
          "upstream-node "
              + file
              + " is not an envoy.config.core.v3.Node in YAML or proto3 JSON: "
              + e.getMessage().replace('\n', ' '));
    }
    return node.build();
  }
}
