package io.xdsproxy.app;

import com.google.common.net.InetAddresses;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How istiod reads the node a stream's first request carries, as far as it decides whether the
 * stream is served and for which namespace: a model of istio/istio's {@code
 * ParseServiceNodeWithMetadata} and {@code GetProxyConfigNamespace} (pilot/pkg/model/context.go),
 * of {@code NodeMetadata}'s JSON fields (pkg/model/proxy.go), of {@code ParseIstioVersion}, and of
 * {@code checkConnectionIdentity} (pilot/pkg/xds/authentication.go), which istiod applies to a
 * stream whose client it authenticated.
 */
final class IstiodNodeCheck {

  /** pkg/model IsApplicationNodeType: the node types istiod serves. */
  private static final Set<String> NODE_TYPES = Set.of("sidecar", "router", "waypoint", "ztunnel");

  /** ParseIstioVersion's istioVersionRegexp. */
  private static final Pattern ISTIO_VERSION =
      Pattern.compile("^([1-9]+)\\.([0-9]+)(\\.([0-9]+))?");

  /**
   * NodeMetadata's fields that are not strings (each other field istiod knows is a string, or a
   * string it parses further): ParseMetadata unmarshals the metadata's JSON into the struct, and a
   * value of the wrong JSON type fails the stream with INVALID_ARGUMENT.
   */
  private static final Set<String> STRING_MAPS =
      Set.of("LABELS", "STATIC_LABELS", "ANNOTATIONS", "PLATFORM_METADATA");

  private static final Set<String> NUMBERS = Set.of("ENVOY_STATUS_PORT", "ENVOY_PROMETHEUS_PORT");
  private static final Set<String> OBJECTS = Set.of("PROXY_CONFIG");

  private IstiodNodeCheck() {}

  /** Why istiod would end a stream with {@code node} as INVALID_ARGUMENT; empty if it would not. */
  static List<String> refusals(Node node) {
    List<String> refusals = new ArrayList<>();
    Map<String, Value> metadata = node.getMetadata().getFieldsMap();
    metadata.forEach(
        (key, value) -> {
          boolean fits;
          if (STRING_MAPS.contains(key)) {
            fits =
                value.hasStructValue()
                    && value.getStructValue().getFieldsMap().values().stream()
                        .allMatch(Value::hasStringValue);
          } else if (NUMBERS.contains(key)) {
            fits = value.getKindCase() == Value.KindCase.NUMBER_VALUE;
          } else {
            fits = OBJECTS.contains(key) ? value.hasStructValue() : value.hasStringValue();
          }
          if (!fits) {
            refusals.add("metadata " + key + " is not of NodeMetadata's type: " + value);
          }
        });
    String[] parts = node.getId().split("~", -1);
    if (parts.length != 4) {
      refusals.add("missing parts in the service node " + node.getId());
      return refusals;
    }
    if (!NODE_TYPES.contains(parts[0])) {
      refusals.add("invalid node type " + parts[0] + " (valid types: " + NODE_TYPES + ")");
    }
    boolean instanceIps =
        metadata.containsKey("INSTANCE_IPS")
            && List.of(metadata.get("INSTANCE_IPS").getStringValue().split(",")).stream()
                .allMatch(InetAddresses::isInetAddress);
    if (!instanceIps && !InetAddresses.isInetAddress(parts[1])) {
      refusals.add("no valid IP address in the service node id or metadata: " + parts[1]);
    }
    return refusals;
  }

  /**
   * The namespace istiod configures the node for: metadata NAMESPACE, else the first label of the
   * id's DNS domain.
   */
  static String configNamespace(Node node) {
    Value namespace = node.getMetadata().getFieldsMap().get("NAMESPACE");
    if (namespace != null && !namespace.getStringValue().isEmpty()) {
      return namespace.getStringValue();
    }
    String[] domain = node.getId().split("~", -1)[3].split("\\.");
    return domain.length > 1 ? domain[0] : "";
  }

  /** The Istio version istiod writes configuration for, if the node names one it can read. */
  static Optional<String> istioVersion(Node node) {
    Value version = node.getMetadata().getFieldsMap().get("ISTIO_VERSION");
    if (version == null) {
      return Optional.empty();
    }
    Matcher matcher = ISTIO_VERSION.matcher(version.getStringValue().replaceFirst("^release-", ""));
    return matcher.find() ? Optional.of(matcher.group()) : Optional.empty();
  }

  /**
   * Why checkConnectionIdentity would refuse {@code node} on a stream authenticated as {@code
   * spiffeId}: its namespace or its SERVICE_ACCOUNT, where given, is not the identity's.
   */
  static Optional<String> identityMismatch(Node node, String spiffeId) {
    Matcher id = Pattern.compile("^spiffe://[^/]+/ns/([^/]+)/sa/([^/]+)$").matcher(spiffeId);
    if (!id.matches()) {
      return Optional.of(spiffeId + " is not a SPIFFE id of a namespace's service account");
    }
    String namespace = configNamespace(node);
    Value serviceAccount = node.getMetadata().getFieldsMap().get("SERVICE_ACCOUNT");
    if (!namespace.isEmpty() && !namespace.equals(id.group(1))) {
      return Optional.of("namespace " + namespace + " is not " + spiffeId + "'s");
    }
    if (serviceAccount != null
        && !serviceAccount.getStringValue().isEmpty()
        && !serviceAccount.getStringValue().equals(id.group(2))) {
      return Optional.of(
          "service account " + serviceAccount.getStringValue() + " is not " + spiffeId + "'s");
    }
    return Optional.empty();
  }
}
