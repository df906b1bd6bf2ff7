package io.xdsproxy.downstream.xds;

import java.security.cert.Certificate;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * Which node ids a client may claim, given the names its TLS client certificate proves: a regex the
 * node id must match whole, in which {@code {san}} stands for one of the certificate's URI or DNS
 * subject alternative names (a SPIFFE id is a URI SAN), taken literally. {@code {san}} alone: the
 * node id is the certificate's SPIFFE id; {@code {san}~.*}: the node id starts with it and a {@code
 * ~}. A client whose node id matches for none of its names is refused.
 *
 * <p>Without this, mTLS proves only that a client holds a certificate of the CA; with it, a client
 * cannot claim another client's node id, and so another node group's configuration.
 */
public final class NodeIdPattern {

  public static final String SAN = "{san}";
  private static final int DNS_NAME = 2;
  private static final int URI = 6;

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

  /** The check of the node ids the client of a call with {@code session} may claim. */
  NodeIdCheck forSession(SSLSession session) {
    List<String> names;
    try {
      names = session == null ? List.of() : names(session.getPeerCertificates());
    } catch (SSLPeerUnverifiedException e) {
      names = List.of();
    }
    List<String> certificateNames = names;
    return nodeId -> refusal(nodeId, certificateNames);
  }

  /**
   * Empty when a client whose certificate names {@code names} may be node {@code nodeId}, else why
   * not.
   */
  Optional<String> refusal(String nodeId, List<String> names) {
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

  private static List<String> names(Certificate[] chain) {
    List<String> names = new ArrayList<>();
    if (chain.length == 0 || !(chain[0] instanceof X509Certificate leaf)) {
      return names;
    }
    try {
      if (leaf.getSubjectAlternativeNames() != null) {
        for (List<?> name : leaf.getSubjectAlternativeNames()) {
          int kind = (Integer) name.get(0);
          if (kind == URI || kind == DNS_NAME) {
            names.add((String) name.get(1));
          }
        }
      }
    } catch (CertificateParsingException e) {
      // A certificate whose names cannot be read proves none.
    }
    return names;
  }

  @Override
  public String toString() {
    return template;
  }
}
