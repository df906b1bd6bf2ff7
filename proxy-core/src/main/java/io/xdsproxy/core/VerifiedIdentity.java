package io.xdsproxy.core;

import java.util.List;
import java.util.Objects;

/**
 * What the proxy verified of a client, once, from its connection's credentials: whether it
 * presented a TLS certificate of the client CA, and the URI and DNS subject alternative names that
 * certificate proves (a SPIFFE id is a URI name), and the address it connects from. Every later
 * decision about what the client may see reads this value, never the node's own claims, as istiod
 * keeps a stream's {@code VerifiedIdentity} (pilot/pkg/xds/auth.go, {@code authenticate}) and
 * compares the node's claims with it ({@code checkConnectionIdentity}).
 *
 * @param certified whether the client presented a certificate that chains to the client CA
 * @param names the certificate's URI and DNS names, in its order; empty without one
 * @param address the host the client connects from, without its port; what limits count a client by
 *     when it has no certificate
 */
public record VerifiedIdentity(boolean certified, List<String> names, String address) {

  /** A client whose connection proves nothing: in-process, or a test. */
  public static final VerifiedIdentity ANONYMOUS = new VerifiedIdentity(false, List.of(), "");

  public VerifiedIdentity {
    names = List.copyOf(names);
    Objects.requireNonNull(address, "address");
    if (!certified && !names.isEmpty()) {
      throw new IllegalArgumentException("names without a certificate prove nothing");
    }
  }

  /** A client without a certificate, known only by the address it connects from. */
  public static VerifiedIdentity anonymous(String address) {
    return new VerifiedIdentity(false, List.of(), address);
  }

  /**
   * Who a client's share of the proxy's state is counted against: its certificate's names when it
   * has some, else its address (DESIGN invariant 12).
   */
  public String tenant() {
    return names.isEmpty() ? "address " + address : String.join(",", names);
  }

  @Override
  public String toString() {
    return certified ? "certificate " + names : "no certificate";
  }
}
