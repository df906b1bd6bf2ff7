package io.xdsproxy.app;

import java.nio.file.Path;
import java.util.Optional;

/**
 * TLS on the xDS port. Off without {@code cert}; with {@code clientCa}, mutual TLS: every client
 * must present a certificate that chains to it; with {@code nodeIdPattern} as well, a client may
 * only be a node whose id the pattern allows for its certificate ({@link
 * io.xdsproxy.downstream.xds.NodeIdPattern}).
 *
 * @param cert the server's certificate chain, PEM, leaf first; with {@code key}, both or neither
 * @param key the server's private key, PKCS#8 PEM
 */
public record ServerTls(
    Optional<Path> cert,
    Optional<Path> key,
    Optional<Path> clientCa,
    Optional<String> nodeIdPattern) {

  public static final ServerTls OFF =
      new ServerTls(Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty());

  public static ServerTls of(Path cert, Path key) {
    return new ServerTls(Optional.of(cert), Optional.of(key), Optional.empty(), Optional.empty());
  }

  public ServerTls withClientCa(Path ca) {
    return new ServerTls(cert, key, Optional.of(ca), nodeIdPattern);
  }

  public ServerTls withNodeIdPattern(String pattern) {
    return new ServerTls(cert, key, clientCa, Optional.of(pattern));
  }

  public boolean enabled() {
    return cert.isPresent();
  }

  public ServerTls withCert(Path chain) {
    return new ServerTls(Optional.of(chain), key, clientCa, nodeIdPattern);
  }

  public ServerTls withKey(Path privateKey) {
    return new ServerTls(cert, Optional.of(privateKey), clientCa, nodeIdPattern);
  }
}
