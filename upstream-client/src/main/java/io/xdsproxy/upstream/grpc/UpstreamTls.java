package io.xdsproxy.upstream.grpc;

import java.nio.file.Path;
import java.util.Optional;

/**
 * How the proxy connects to the control plane and proves who it is: plaintext, or TLS trusting
 * {@code ca} (the JVM's trust store without it), presenting {@code cert} and {@code key} when the
 * control plane wants a client certificate (mTLS), and a bearer token read from {@code tokenFile}
 * when it wants one ({@link BearerTokenFile}). {@code authority} replaces the host of the target as
 * the name the control plane's certificate must carry and as the HTTP/2 {@code :authority}.
 *
 * @param enabled TLS on; implied by {@code ca} and {@code cert}
 * @param cert with {@code key}, both or neither
 * @param tokenOverPlaintext whether the token may be sent without TLS, where anyone on the path
 *     reads it
 */
public record UpstreamTls(
    boolean enabled,
    Optional<Path> ca,
    Optional<Path> cert,
    Optional<Path> key,
    Optional<String> authority,
    Optional<Path> tokenFile,
    boolean tokenOverPlaintext) {

  public static final UpstreamTls PLAINTEXT =
      new UpstreamTls(
          false,
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          Optional.empty(),
          false);

  public UpstreamTls {
    enabled = enabled || ca.isPresent() || cert.isPresent();
  }

  /** TLS trusting the JVM's trust store. */
  public static UpstreamTls systemTrust() {
    return PLAINTEXT.withTls();
  }

  public UpstreamTls withCa(Path file) {
    return new UpstreamTls(
        true, Optional.of(file), cert, key, authority, tokenFile, tokenOverPlaintext);
  }

  public UpstreamTls withClientCertificate(Path certFile, Path keyFile) {
    return withCert(certFile).withKey(keyFile);
  }

  public UpstreamTls withAuthority(String name) {
    return new UpstreamTls(
        enabled, ca, cert, key, Optional.of(name), tokenFile, tokenOverPlaintext);
  }

  /** TLS on, the rest as it is. */
  public UpstreamTls withTls() {
    return new UpstreamTls(true, ca, cert, key, authority, tokenFile, tokenOverPlaintext);
  }

  public UpstreamTls withCert(Path chain) {
    return new UpstreamTls(
        enabled, ca, Optional.of(chain), key, authority, tokenFile, tokenOverPlaintext);
  }

  public UpstreamTls withKey(Path privateKey) {
    return new UpstreamTls(
        enabled, ca, cert, Optional.of(privateKey), authority, tokenFile, tokenOverPlaintext);
  }

  /** A bearer token read from {@code file} on every call. */
  public UpstreamTls withTokenFile(Path file) {
    return new UpstreamTls(
        enabled, ca, cert, key, authority, Optional.of(file), tokenOverPlaintext);
  }

  /** Whether the token may be sent over plaintext. */
  public UpstreamTls withTokenOverPlaintext(boolean allowed) {
    return new UpstreamTls(enabled, ca, cert, key, authority, tokenFile, allowed);
  }
}
