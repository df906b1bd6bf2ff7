package io.xdsproxy.core;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * A configurable node-group rule: the key is made of parts, each named by a spec string. A part is
 * either <em>claimed</em>, read from the client's {@link Node}:
 *
 * <ul>
 *   <li>{@code cluster}: {@code node.cluster};
 *   <li>{@code id:<regex>}: the first capture group of a regular expression found in {@code
 *       node.id} (from Istio's {@code sidecar~10.0.0.1~pod.namespace~...}, {@code
 *       id:^[^~]*~[^~]*~[^.~]*\.([^~]+)~} takes the namespace);
 *   <li>{@code metadata:<dotted.path>}: a value in {@code node.metadata};
 *   <li>{@code locality}: {@code region/zone/sub_zone};
 * </ul>
 *
 * or <em>verified</em>, read from the names of the client's certificate ({@link VerifiedIdentity}):
 *
 * <ul>
 *   <li>{@code san:<regex>}: the first capture group of a regular expression found in the
 *       certificate's URI or DNS names ({@code san:^spiffe://[^/]+/ns/([^/]+)/} takes the namespace
 *       of a SPIFFE id); every name it is found in must give the same value;
 *   <li>{@code <claimed part>=san:<regex>}: the verified value, which the node's claim must equal
 *       where the node makes it ({@code metadata:NAMESPACE=san:^spiffe://[^/]+/ns/([^/]+)/}), as
 *       istiod's {@code checkConnectionIdentity} (pilot/pkg/xds/auth.go) refuses a node whose
 *       namespace or service account disagree with its SPIFFE id.
 * </ul>
 *
 * A client whose node lacks a claimed part cannot be grouped, and is told which part and why; a
 * client whose certificate proves no value of a verified part, or whose node claims another value,
 * is not entitled to a group.
 */
public final class NodeGroupRule implements NodeGrouping {

  private static final String SAN = "san:";
  private static final String BOUND = "=" + SAN;

  /** How a part reads the node: its value, or empty when the node does not say. */
  private interface Claim {
    Optional<String> valueOf(Node node) throws UngroupableNodeException;
  }

  /**
   * One part of the key: a claim alone, a certificate's name alone, or both, which must agree.
   *
   * @param spec as the operator gave it
   * @param claim what the node says, or null
   * @param claimSpec the claim's own spec, for messages, or null
   * @param verified the regex over the certificate's names, or null
   */
  private record Part(String spec, Claim claim, String claimSpec, Pattern verified) {

    String valueOf(Node node, VerifiedIdentity identity) throws UngroupableNodeException {
      if (verified == null) {
        Optional<String> claimed = claim.valueOf(node);
        if (claimed.isEmpty()) {
          throw ungroupable(
              node,
              claimSpec.startsWith("id:")
                  ? "has an id that does not match " + claimSpec.substring("id:".length())
                  : "has no " + described(claimSpec));
        }
        return claimed.get();
      }
      String proven = proven(node, identity);
      if (claim != null) {
        Optional<String> claimed = claim.valueOf(node);
        if (claimed.isPresent() && !claimed.get().equals(proven)) {
          throw new NotEntitledException(
              "node '"
                  + node.getId()
                  + "' claims "
                  + described(claimSpec)
                  + " '"
                  + claimed.get()
                  + "', but its client certificate of "
                  + identity.names()
                  + " proves '"
                  + proven
                  + "' (node-group key part "
                  + spec
                  + ")");
        }
      }
      return proven;
    }

    private String proven(Node node, VerifiedIdentity identity) throws NotEntitledException {
      String proven = null;
      for (String name : identity.names()) {
        Matcher matcher = verified.matcher(name);
        if (matcher.find() && matcher.group(1) != null && !matcher.group(1).isEmpty()) {
          if (proven != null && !proven.equals(matcher.group(1))) {
            throw new NotEntitledException(
                "node '"
                    + node.getId()
                    + "': the names of its client certificate "
                    + identity.names()
                    + " give both '"
                    + proven
                    + "' and '"
                    + matcher.group(1)
                    + "' for the node-group key part "
                    + spec);
          }
          proven = matcher.group(1);
        }
      }
      if (proven == null) {
        throw new NotEntitledException(
            "node '"
                + node.getId()
                + "' is entitled to no node group: "
                + (identity.certified()
                    ? "no name of its client certificate " + identity.names() + " matches "
                    : "it presented no client certificate, which the node-group key part ")
                + spec
                + (identity.certified() ? "" : " needs"));
      }
      return proven;
    }
  }

  private final List<String> specs;
  private final List<Part> parts;

  private NodeGroupRule(List<String> specs, List<Part> parts) {
    this.specs = List.copyOf(specs);
    this.parts = List.copyOf(parts);
  }

  /**
   * The rule made of {@code specs}, in order.
   *
   * @throws IllegalArgumentException naming the spec that is not one of the forms above
   */
  public static NodeGroupRule of(List<String> specs) {
    if (specs.isEmpty()) {
      throw new IllegalArgumentException("a node-group rule needs at least one part");
    }
    List<Part> parts = new ArrayList<>();
    for (String spec : specs) {
      parts.add(part(spec));
    }
    return new NodeGroupRule(specs, parts);
  }

  private static Part part(String spec) {
    if (spec.startsWith(SAN)) {
      return new Part(spec, null, null, capturing(spec, spec.substring(SAN.length())));
    }
    int bound = spec.lastIndexOf(BOUND);
    if (bound > 0) {
      String claimSpec = spec.substring(0, bound);
      return new Part(
          spec,
          claim(claimSpec),
          claimSpec,
          capturing(spec, spec.substring(bound + BOUND.length())));
    }
    return new Part(spec, claim(spec), spec, null);
  }

  private static Pattern capturing(String spec, String regex) {
    Pattern pattern;
    try {
      pattern = Pattern.compile(regex);
    } catch (PatternSyntaxException e) {
      throw new IllegalArgumentException(
          "node-group part '" + spec + "': not a regular expression: " + e.getDescription());
    }
    if (pattern.matcher("").groupCount() < 1) {
      throw new IllegalArgumentException(
          "node-group part '" + spec + "': the expression needs a capture group");
    }
    return pattern;
  }

  private static Claim claim(String spec) {
    if (spec.equals("cluster")) {
      return node -> present(node.getCluster());
    }
    if (spec.equals("locality")) {
      return node -> {
        if (!node.hasLocality()) {
          return Optional.empty();
        }
        Locality locality = node.getLocality();
        return Optional.of(
            locality.getRegion() + "/" + locality.getZone() + "/" + locality.getSubZone());
      };
    }
    if (spec.startsWith("id:")) {
      Pattern pattern = capturing(spec, spec.substring("id:".length()));
      return node -> {
        Matcher matcher = pattern.matcher(node.getId());
        return matcher.find() ? present(matcher.group(1)) : Optional.empty();
      };
    }
    if (spec.startsWith("metadata:") && spec.length() > "metadata:".length()) {
      String path = spec.substring("metadata:".length());
      String[] fields = path.split("\\.");
      return node -> {
        Value value = Value.newBuilder().setStructValue(node.getMetadata()).build();
        for (String field : fields) {
          Struct struct = value.getStructValue();
          if (!value.hasStructValue() || !struct.containsFields(field)) {
            return Optional.empty();
          }
          value = struct.getFieldsOrThrow(field);
        }
        return switch (value.getKindCase()) {
          case STRING_VALUE -> present(value.getStringValue());
          case NUMBER_VALUE -> Optional.of(Double.toString(value.getNumberValue()));
          case BOOL_VALUE -> Optional.of(Boolean.toString(value.getBoolValue()));
          default ->
              throw ungroupable(
                  node, "has node.metadata." + path + " that is not a string, number or boolean");
        };
      };
    }
    throw new IllegalArgumentException(
        "node-group part '"
            + spec
            + "' is none of cluster, locality, id:<regex>, metadata:<dotted.path>, san:<regex>,"
            + " <part>=san:<regex>");
  }

  /** What a claimed part reads of the node, as a message names it. */
  private static String described(String claimSpec) {
    if (claimSpec.startsWith("id:")) {
      return "the id part " + claimSpec.substring("id:".length());
    }
    return "node." + claimSpec.replace("metadata:", "metadata.");
  }

  private static Optional<String> present(String value) {
    return value == null || value.isEmpty() ? Optional.empty() : Optional.of(value);
  }

  private static UngroupableNodeException ungroupable(Node node, String why) {
    return new UngroupableNodeException(
        "node '" + node.getId() + "' " + why + ", which the node-group rule needs");
  }

  @Override
  public NodeGroupKey keyOf(Node node, VerifiedIdentity identity) throws UngroupableNodeException {
    List<String> values = new ArrayList<>(parts.size());
    for (Part part : parts) {
      values.add(part.valueOf(node, identity));
    }
    return NodeGroupKey.of(values);
  }

  @Override
  public List<String> claimedParts(boolean nodeIdVerified) {
    return parts.stream()
        .filter(part -> part.verified() == null)
        .filter(part -> !(nodeIdVerified && part.spec().startsWith("id:")))
        .map(Part::spec)
        .toList();
  }

  @Override
  public String toString() {
    return String.join(", ", specs);
  }
}
