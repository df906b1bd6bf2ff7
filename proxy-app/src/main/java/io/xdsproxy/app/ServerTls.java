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
 * @param provider the TLS implementation of the gRPC port ({@link TlsProvider}); the REST-JSON
 *     port's is the JDK's whatever this says
 */
public record ServerTls(
    Optional<Path> cert,
    Optional<Path> key,
    Optional<Path> clientCa,
    Optional<String> nodeIdPattern,
    TlsProvider provider) {

  public static final ServerTls OFF =
      new ServerTls(
          Optional.empty(), Optional.empty(), Optional.empty(), Optional.empty(), TlsProvider.AUTO);

  public static ServerTls of(Path cert, Path key) {
    return OFF.withCert(cert).withKey(key);
  }

  public ServerTls withClientCa(Path ca) {
    return new ServerTls(cert, key, Optional.of(ca), nodeIdPattern, provider);
  }

  public ServerTls withNodeIdPattern(String pattern) {
    return new ServerTls(cert, key, clientCa, Optional.of(pattern), provider);
  }

  public boolean enabled() {
    return cert.isPresent();
  }

  public ServerTls withCert(Path chain) {
    return new ServerTls(Optional.of(chain), key, clientCa, nodeIdPattern, provider);
  }

  public ServerTls withKey(Path privateKey) {
    return new ServerTls(cert, Optional.of(privateKey), clientCa, nodeIdPattern, provider);
  }

  public ServerTls withProvider(TlsProvider implementation) {
    return new ServerTls(cert, key, clientCa, nodeIdPattern, implementation);
  }
}
