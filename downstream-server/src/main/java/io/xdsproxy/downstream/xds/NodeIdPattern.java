package io.xdsproxy.downstream.xds;

import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Which node ids a client may claim, given the names its TLS client certificate proves: a regex the
 * node id must match whole, in which {@code {san}} stands for one of the certificate's URI or DNS
 * subject alternative names (a SPIFFE id is a URI SAN), taken literally. {@code {san}} alone: the
 * node id is the certificate's SPIFFE id; {@code {san}~.*}: the node id starts with it and a {@code
 * ~}. A client whose node id matches for none of its names is refused.
 *
 * <p>Without this, mTLS proves only that a client holds a certificate of the CA; with it, a client
 * cannot claim another client's node id, which a control plane may tell nodes apart by. Which group
 * a client joins is bound to its certificate by the node-group rule ({@code san:} parts), not by
 * this pattern, unless it is {@code {san}} alone ({@link #provesWholeId}).
 */
public final class NodeIdPattern {

  public static final String SAN = "{san}";

  private final String template;

  /**
   * @throws IllegalArgumentException when {@code template} lacks {@code {san}} or is not a regex
   */
  public NodeIdPattern(String template) {
    if (!template.contains(SAN)) {
      throw new IllegalArgumentException(
          "the pattern '"
              + template
              + "' does not hold "
              + SAN
              + ", the client certificate's name");
    }
    try {
      Pattern.compile(template.replace(SAN, "x"));
    } catch (PatternSyntaxException e) {
      throw new IllegalArgumentException(
          "the pattern '"
              + template
              + "' is not a regex: "
              + e.getDescription()
              + " near index "
              + e.getIndex());
    }
    this.template = template;
  }

  /**
   * Whether the whole node id must be one of the certificate's names: what the id says is proven.
   */
  public boolean provesWholeId() {
    return template.equals(SAN);
  }

  /**
   * Empty when a client whose certificate names {@code names} may be node {@code nodeId}, else why
   * not.
   */
  public Optional<String> refusal(String nodeId, List<String> names) {
    if (names.isEmpty()) {
      return Optional.of(
          "node id '"
              + nodeId
              + "' refused: the client presented no certificate with a URI or DNS name");
    }
    for (String name : names) {
      if (Pattern.compile(template.replace(SAN, Pattern.quote(name))).matcher(nodeId).matches()) {
        return Optional.empty();
      }
    }
    return Optional.of(
        "node id '"
            + nodeId
            + "' is not allowed for the client certificate of "
            + names
            + " (tls-node-id-pattern "
            + template
            + ")");
  }

  @Override
  public String toString() {
    return template;
  }
}
