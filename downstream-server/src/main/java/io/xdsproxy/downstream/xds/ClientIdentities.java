package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.VerifiedIdentity;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.security.cert.Certificate;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * What a client connection proves ({@link VerifiedIdentity}), read from its TLS session, whose
 * handshake has verified the client's certificate against the client CA: {@link PeerInterceptor}
 * reads it once per call (kept per connection, it cost each connection a second copy of its
 * attributes), and REST once per request.
 */
public final class ClientIdentities {

  private static final int DNS_NAME = 2;
  private static final int URI = 6;

  private ClientIdentities() {}

  /**
   * What a connection with {@code session} (null for plaintext) from {@code address} proves: the
   * certificate's URI and DNS names when the client presented one the handshake verified.
   */
  public static VerifiedIdentity of(SSLSession session, SocketAddress address) {
    String host = host(address);
    if (session == null) {
      return VerifiedIdentity.anonymous(host);
    }
    Certificate[] chain;
    try {
      chain = session.getPeerCertificates();
    } catch (SSLPeerUnverifiedException noCertificate) {
      return VerifiedIdentity.anonymous(host);
    }
    return new VerifiedIdentity(true, names(chain), host);
  }

  private static String host(SocketAddress address) {
    if (address instanceof InetSocketAddress inet) {
      return inet.getAddress() == null ? inet.getHostString() : inet.getAddress().getHostAddress();
    }
    return address == null ? "" : address.toString();
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
}
