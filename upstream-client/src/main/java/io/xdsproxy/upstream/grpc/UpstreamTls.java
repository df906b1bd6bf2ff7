package io.xdsproxy.upstream.grpc;

import java.nio.file.Path;
import java.util.Optional;

/**
 * How the proxy connects to the control plane: plaintext, or TLS trusting {@code ca} (the JVM's
 * trust store without it), presenting {@code cert} and {@code key} when the control plane wants a
 * client certificate (mTLS). {@code authority} replaces the host of the target as the name the
 * control plane's certificate must carry and as the HTTP/2 {@code :authority}.
 *
 * @param enabled TLS on; implied by {@code ca} and {@code cert}
 * @param cert with {@code key}, both or neither
 */
public record UpstreamTls(
    boolean enabled,
    Optional<Path> ca,
    Optional<Path> cert,
    Optional<Path> key,
    Optional<String> authority) {

  public static final UpstreamTls PLAINTEXT =
      new UpstreamTls(
          false, Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty());

  public UpstreamTls {
    enabled = enabled || ca.isPresent() || cert.isPresent();
  }

  /** TLS trusting the JVM's trust store. */
  public static UpstreamTls systemTrust() {
    return new UpstreamTls(
        true, Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty());
  }

  public UpstreamTls withCa(Path file) {
    return new UpstreamTls(true, Optional.of(file), cert, key, authority);
  }

  public UpstreamTls withClientCertificate(Path certFile, Path keyFile) {
    return new UpstreamTls(true, ca, Optional.of(certFile), Optional.of(keyFile), authority);
  }

  public UpstreamTls withAuthority(String name) {
    return new UpstreamTls(enabled, ca, cert, key, Optional.of(name));
  }

  /** TLS on, the rest as it is. */
  public UpstreamTls withTls() {
    return new UpstreamTls(true, ca, cert, key, authority);
  }

  public UpstreamTls withCert(Path chain) {
    return new UpstreamTls(enabled, ca, Optional.of(chain), key, authority);
  }

  public UpstreamTls withKey(Path privateKey) {
    return new UpstreamTls(enabled, ca, cert, Optional.of(privateKey), authority);
  }
}
