package io.xdsproxy.app;

import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.OpenSslCachingX509KeyManagerFactory;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.util.KeyManagerFactoryWrapper;
import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.Locale;
import java.util.Optional;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * Which TLS implementation the xDS port's handshakes and records run on ({@code --tls-provider}):
 * BoringSSL through netty-tcnative ({@link #OPENSSL}, what grpc-java recommends), the JDK's {@code
 * SSLEngine} ({@link #JDK}), or the first when its native library loads and the second otherwise
 * ({@link #AUTO}). The library ships for Linux on x86_64 and aarch64 with glibc (the image's
 * eclipse-temurin base); on any other system {@code auto} is the JDK's.
 *
 * <p>Why choose at all: grpc-java's {@code TlsServerCredentials} takes whichever its class path
 * offers, so the provider would change with a jar, unsaid. The choice is made once, said in the
 * start-up line and in {@code xds_proxy_tls_provider}, and {@code openssl} refuses to start rather
 * than fall back without a word.
 */
public enum TlsProvider {
  AUTO,
  OPENSSL,
  JDK;

  /** The flag's spelling of each. */
  public String flagValue() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The flag's value {@code value} names.
   *
   * @throws IllegalArgumentException naming the values there are
   */
  public static TlsProvider of(String value) {
    for (TlsProvider provider : values()) {
      if (provider.flagValue().equals(value)) {
        return provider;
      }
    }
    throw new IllegalArgumentException(
        "tls-provider '" + value + "' is none of auto, openssl, jdk");
  }

  /**
   * What a provider asked for comes to on a machine: the implementation used, and when {@code auto}
   * fell back to the JDK's, why the native library did not load.
   */
  public record Chosen(SslProvider provider, Optional<String> fallbackReason) {
    /** As the start-up line and the metric name it: {@code openssl} or {@code jdk}. */
    public String name() {
      return provider == SslProvider.JDK ? "jdk" : "openssl";
    }
  }

  /**
   * What this provider comes to when BoringSSL {@code loads} or does not, for {@code cause}: {@code
   * auto} is OpenSSL when it loads and the JDK's when not, saying why; {@code openssl} when it does
   * not load is refused.
   *
   * @throws IllegalStateException for {@code openssl} when the library does not load, naming the
   *     flag and the cause
   */
  public Chosen choose(boolean loads, Throwable cause) {
    return switch (this) {
      case JDK -> new Chosen(SslProvider.JDK, Optional.empty());
      case OPENSSL -> {
        if (!loads) {
          throw new IllegalStateException(
              "--tls-provider openssl, but BoringSSL (netty-tcnative) cannot load here: "
                  + describe(cause)
                  + "; give --tls-provider jdk, or auto to fall back to the JDK's TLS");
        }
        yield new Chosen(SslProvider.OPENSSL, Optional.empty());
      }
      case AUTO ->
          loads
              ? new Chosen(SslProvider.OPENSSL, Optional.empty())
              : new Chosen(SslProvider.JDK, Optional.of(describe(cause)));
    };
  }

  /** {@link #choose(boolean, Throwable)} on this machine, as Netty finds its native library. */
  public Chosen choose() {
    if (!OpenSsl.isAvailable()) {
      return choose(false, OpenSsl.unavailabilityCause());
    }
    if (!OpenSsl.isAlpnSupported()) {
      return choose(false, new UnsupportedOperationException("it has no ALPN, which HTTP/2 needs"));
    }
    return choose(true, null);
  }

  private static String describe(Throwable cause) {
    if (cause == null) {
      return "no cause given";
    }
    StringBuilder text = new StringBuilder(cause.toString());
    for (Throwable under = cause.getCause();
        under != null && under != cause;
        under = under.getCause()) {
      text.append(" (caused by ").append(under).append(')');
    }
    return text.toString().replace('\n', ' ');
  }

  /**
   * A server's TLS context on {@code provider}, configured for gRPC (ALPN h2, HTTP/2's ciphers):
   * presenting what {@code identity} holds and, with {@code clientCa}, requiring a client
   * certificate it trusts. Both managers are asked at each handshake, so certificates they reload
   * reach new connections.
   *
   * <p>Under OpenSSL, the key material is converted for BoringSSL once per alias of the manager
   * rather than at every handshake ({@link OpenSslCachingX509KeyManagerFactory}): grpc-java's
   * {@code AdvancedTlsX509KeyManager} names each certificate it is given anew ({@code key-1},
   * {@code key-2}, …), so a rotated certificate is a new alias and is converted on its first
   * handshake. And the certificate request names no CAs ({@link NamingNoCa}): Netty gives BoringSSL
   * the names once, as the context is made, so after the client CA file gained a CA, a client whose
   * key manager picks its certificate by those names (the JDK's default one, as a grpc-java client
   * given key files has) would present none the new CA issued. The JDK's engine asks the trust
   * manager for the names at each handshake.
   */
  public static SslContext serverContext(
      X509ExtendedKeyManager identity,
      Optional<? extends X509ExtendedTrustManager> clientCa,
      SslProvider provider)
      throws SSLException {
    boolean jdk = provider == SslProvider.JDK;
    SslContextBuilder builder =
        jdk
            ? SslContextBuilder.forServer(identity)
            : SslContextBuilder.forServer(
                new OpenSslCachingX509KeyManagerFactory(new KeyManagerFactoryWrapper(identity)));
    clientCa.ifPresent(
        ca -> builder.trustManager(jdk ? ca : new NamingNoCa(ca)).clientAuth(ClientAuth.REQUIRE));
    return GrpcSslContexts.configure(builder, provider).build();
  }

  /** A trust manager that checks as {@code trust} does, and lists no CA to a client. */
  private static final class NamingNoCa extends X509ExtendedTrustManager {
    private final X509ExtendedTrustManager trust;

    NamingNoCa(X509ExtendedTrustManager trust) {
      this.trust = trust;
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
      return new X509Certificate[0];
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
        throws CertificateException {
      trust.checkClientTrusted(chain, authType, socket);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
        throws CertificateException {
      trust.checkClientTrusted(chain, authType, engine);
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType)
        throws CertificateException {
      trust.checkClientTrusted(chain, authType);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
        throws CertificateException {
      trust.checkServerTrusted(chain, authType, socket);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
        throws CertificateException {
      trust.checkServerTrusted(chain, authType, engine);
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType)
        throws CertificateException {
      trust.checkServerTrusted(chain, authType);
    }
  }
}
