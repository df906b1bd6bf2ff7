package io.xdsproxy.app;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import io.grpc.ServerCredentials;
import io.grpc.netty.NettySslContextServerCredentials;
import io.grpc.util.AdvancedTlsX509KeyManager;
import io.grpc.util.AdvancedTlsX509TrustManager;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.handler.ssl.SslContext;
import io.xdsproxy.upstream.grpc.TlsFiles;
import io.xdsproxy.upstream.grpc.TlsMetrics;
import java.io.IOException;
import java.security.GeneralSecurityException;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The xDS port's TLS material, loaded once and shared by every listener that serves xDS: the gRPC
 * port and the REST-JSON port. Both present the same certificate and require client certificates of
 * the same CA, and a certificate rotated on disk reaches both at once, because they hold the same
 * managers, which {@link TlsFiles} keeps up to date. The gRPC port's handshakes run on the provider
 * {@code --tls-provider} chooses ({@link TlsProvider}); the REST-JSON port's on the JDK's, which is
 * the only one its HTTP server takes.
 */
final class XdsPortTls {

  private static final Logger log = LoggerFactory.getLogger(XdsPortTls.class);

  private final AdvancedTlsX509KeyManager identity;
  private final Optional<AdvancedTlsX509TrustManager> clientCa;
  private final TlsProvider.Chosen provider;
  private final SslContext grpcContext;

  private XdsPortTls(
      AdvancedTlsX509KeyManager identity,
      Optional<AdvancedTlsX509TrustManager> clientCa,
      TlsProvider.Chosen provider)
      throws IOException {
    this.identity = identity;
    this.clientCa = clientCa;
    this.provider = provider;
    try {
      this.grpcContext = TlsProvider.serverContext(identity, clientCa, provider.provider());
    } catch (SSLException e) {
      throw new IOException(
          "cannot make the xDS port's TLS context (" + provider.name() + "): " + e.getMessage(), e);
    }
  }

  /**
   * The material {@code tls} names, its files polled on {@code timer}; empty when TLS is off. The
   * certificates' expiry and the changes that did not load are measured in {@code meters} (uses
   * {@code server} and {@code client-ca}).
   *
   * @throws IOException naming a file that cannot be read or parsed, or the provider asked for when
   *     it cannot load here
   */
  static Optional<XdsPortTls> load(
      ServerTls tls, ScheduledExecutorService timer, MeterRegistry meters) throws IOException {
    if (!tls.enabled()) {
      return Optional.empty();
    }
    TlsProvider.Chosen provider;
    try {
      provider = tls.provider().choose();
    } catch (IllegalStateException cannotLoad) {
      throw new IOException(cannotLoad.getMessage(), cannotLoad);
    }
    provider
        .fallbackReason()
        .ifPresent(
            why ->
                log.warn(
                    "--tls-provider auto: BoringSSL (netty-tcnative) cannot load here, so the xDS"
                        + " port's TLS runs on the JDK's: {}",
                    why));
    AdvancedTlsX509KeyManager identity =
        TlsFiles.identity(
                tls.cert().orElseThrow(),
                tls.key().orElseThrow(),
                timer,
                new TlsMetrics(meters, "server"))
            .manager();
    Optional<AdvancedTlsX509TrustManager> clientCa =
        tls.clientCa().isPresent()
            ? Optional.of(
                TlsFiles.trust(
                        tls.clientCa().get(), false, timer, new TlsMetrics(meters, "client-ca"))
                    .manager())
            : Optional.empty();
    return Optional.of(new XdsPortTls(identity, clientCa, provider));
  }

  /** For the gRPC port: with a client CA, client certificates required. */
  ServerCredentials grpc() {
    return NettySslContextServerCredentials.create(grpcContext);
  }

  /** The gRPC port's provider, and why {@code auto} fell back to the JDK's if it did. */
  TlsProvider.Chosen provider() {
    return provider;
  }

  /** The gRPC port's TLS context: for tests that check which implementation it is. */
  SslContext grpcContext() {
    return grpcContext;
  }

  /**
   * For the JDK HTTPS server of the REST-JSON port: as {@link #grpc()}, a client without a
   * certificate of the client CA fails the handshake.
   */
  HttpsConfigurator https() throws IOException {
    SSLContext context;
    try {
      context = SSLContext.getInstance("TLS");
      context.init(
          new KeyManager[] {identity},
          clientCa.map(ca -> new TrustManager[] {ca}).orElse(null),
          null);
    } catch (GeneralSecurityException e) {
      throw new IOException(
          "cannot make the TLS context of the REST-JSON port: " + e.getMessage(), e);
    }
    boolean needClientAuth = clientCa.isPresent();
    return new HttpsConfigurator(context) {
      @Override
      public void configure(HttpsParameters parameters) {
        SSLParameters ssl = getSSLContext().getDefaultSSLParameters();
        ssl.setNeedClientAuth(needClientAuth);
        parameters.setSSLParameters(ssl);
      }
    };
  }
}
