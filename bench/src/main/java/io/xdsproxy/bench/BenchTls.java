package io.xdsproxy.bench;

import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ServerCredentials;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettySslContextChannelCredentials;
import io.grpc.netty.NettySslContextServerCredentials;
import io.netty.handler.ssl.OpenSsl;
import io.netty.handler.ssl.OpenSslSessionContext;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.xdsproxy.app.TlsProvider;
import io.xdsproxy.upstream.grpc.TlsFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import javax.net.ssl.SSLException;

/**
 * TLS in a benchmark run ({@code --tls off|mutual}, {@code --tls-provider auto|openssl|jdk}): with
 * {@code mutual}, every server the load clients connect to (the proxy's xDS port, the floor, the
 * control plane serving directly) requires a client certificate of the run's CA ({@link
 * BenchCertificates}) and presents its own, on the TLS provider given, built as the proxy builds
 * its port's ({@link TlsProvider#serverContext}); the clients of node group {@code g} present group
 * {@code g}'s certificate. The proxy is started as a fleet runs it: its node-group key is the
 * client's cluster bound to the certificate's namespace ({@code cluster=san:...}, a node that
 * claims another group is refused) and its node ids are checked against the certificate ({@code
 * --tls-node-id-pattern {san}~.*}), so the load clients' node ids are their SPIFFE id, {@code ~}
 * and their own id. The proxy's link to the control plane stays plaintext: it is one connection per
 * group, not what is measured.
 *
 * <p>Every client handshake is a full one, as a fleet's first connection to a replica is: the
 * clients run on BoringSSL with their session cache off, so none resumes the session of another
 * client of its group (the JDK's client would, from a cache keyed by host and port, if the server
 * issues tickets, as the JDK's server does).
 */
final class BenchTls {

  /** Plaintext everywhere. */
  static final BenchTls OFF = new BenchTls(false, TlsProvider.AUTO, null);

  /** The proxy's node-group key with mutual TLS: the cluster, bound to the SPIFFE namespace. */
  static final String NODE_GROUP_KEY =
      "cluster=san:^spiffe://"
          + BenchCertificates.TRUST_DOMAIN.replace(".", "\\.")
          + "/ns/([^/]+)/";

  private final boolean mutual;
  private final TlsProvider provider;
  private final BenchCertificates certificates;
  private final Map<Integer, ChannelCredentials> clientCredentials = new ConcurrentHashMap<>();

  private BenchTls(boolean mutual, TlsProvider provider, BenchCertificates certificates) {
    this.mutual = mutual;
    this.provider = provider;
    this.certificates = certificates;
  }

  /**
   * The TLS {@code --tls} and {@code --tls-provider} ask for; with {@code mutual}, its certificates
   * made in a new temporary directory.
   */
  static BenchTls parse(Args given) {
    String mode = given.text("tls", "off");
    TlsProvider provider = TlsProvider.of(given.text("tls-provider", "auto"));
    return switch (mode) {
      case "off" -> OFF;
      case "mutual" -> {
        try {
          yield new BenchTls(
              true, provider, BenchCertificates.make(Files.createTempDirectory("xds-bench-tls-")));
        } catch (IOException e) {
          throw new UncheckedIOException("cannot write the run's certificates", e);
        }
      }
      default ->
          throw new IllegalArgumentException("--tls '" + mode + "' is neither off nor mutual");
    };
  }

  boolean mutual() {
    return mutual;
  }

  /** What a table's heading says of it: "TLS: off", or "TLS: mutual (provider openssl)". */
  String describe(List<String> providers) {
    if (!mutual) {
      return "TLS: off";
    }
    List<String> distinct = providers.stream().distinct().toList();
    return "TLS: mutual (provider "
        + (distinct.isEmpty() ? provider.flagValue() : String.join(", ", distinct))
        + ")";
  }

  /** The proxy's flags for its xDS port, none without TLS. */
  List<String> proxyFlags() {
    if (!mutual) {
      return List.of();
    }
    return List.of(
        "--tls-cert",
        certificates.serverCertFile().toString(),
        "--tls-key",
        certificates.serverKeyFile().toString(),
        "--tls-client-ca",
        certificates.caFile().toString(),
        "--tls-provider",
        provider.flagValue(),
        "--node-group-key",
        NODE_GROUP_KEY,
        "--tls-node-id-pattern",
        "{san}~.*");
  }

  /**
   * What a server of the clients ({@link BenchFloor}, {@link BenchControlPlane}) is given after its
   * own arguments to serve them so ({@link #serving}): none without TLS.
   */
  List<String> serverArguments() {
    return mutual
        ? List.of(certificates.caFile().getParent().toString(), provider.flagValue())
        : List.of();
  }

  /** A server's credentials, and the name of the provider they run on. */
  record Serving(ServerCredentials credentials, String provider) {}

  /**
   * The credentials {@link #serverArguments} {@code arguments} (from {@code first} on) name, as the
   * proxy's xDS port's: the server certificate and the client CA of the run's directory, read by
   * the proxy's {@link TlsFiles} and polled every second as the proxy polls its own, client
   * certificates required; empty without them.
   */
  static Optional<Serving> serving(String[] arguments, int first) throws IOException {
    if (arguments.length <= first) {
      return Optional.empty();
    }
    ScheduledExecutorService timer =
        Executors.newSingleThreadScheduledExecutor(
            task -> {
              Thread thread = new Thread(task, "tls-files");
              thread.setDaemon(true);
              return thread;
            });
    Path dir = Path.of(arguments[first]);
    TlsProvider.Chosen chosen = TlsProvider.of(arguments[first + 1]).choose();
    SslContext context =
        TlsProvider.serverContext(
            TlsFiles.identity(
                    dir.resolve("server.pem"),
                    dir.resolve("server.key"),
                    timer,
                    TlsFiles.Listener.NONE)
                .manager(),
            Optional.of(
                TlsFiles.trust(dir.resolve("ca.pem"), false, timer, TlsFiles.Listener.NONE)
                    .manager()),
            chosen.provider());
    return Optional.of(
        new Serving(NettySslContextServerCredentials.create(context), chosen.name()));
  }

  /**
   * The node id of client {@code id} of node group {@code group}: with TLS, its certificate's
   * SPIFFE id, {@code ~} and the id, as {@code --tls-node-id-pattern {san}~.*} allows.
   */
  String nodeId(int group, String id) {
    return mutual ? BenchCertificates.spiffeId(BenchControlPlane.groupName(group)) + "~" + id : id;
  }

  /**
   * How a client of node group {@code group} connects: plaintext, or presenting the group's
   * certificate and trusting the run's CA, on BoringSSL with no session cache. One per group,
   * shared by its connections.
   */
  ChannelCredentials channel(int group) {
    if (!mutual) {
      return InsecureChannelCredentials.create();
    }
    return clientCredentials.computeIfAbsent(group, this::newChannelCredentials);
  }

  private ChannelCredentials newChannelCredentials(int group) {
    if (!OpenSsl.isAvailable()) {
      throw new IllegalStateException(
          "the bench's TLS clients run on BoringSSL, so that no handshake resumes another's"
              + " session, and it cannot load here: "
              + OpenSsl.unavailabilityCause());
    }
    BenchCertificates.Identity identity = certificates.client(BenchControlPlane.groupName(group));
    try {
      SslContext context =
          GrpcSslContexts.configure(
                  SslContextBuilder.forClient()
                      .keyManager(identity.key(), identity.chain())
                      .trustManager(certificates.ca()),
                  SslProvider.OPENSSL)
              .build();
      ((OpenSslSessionContext) context.sessionContext()).setSessionCacheEnabled(false);
      return NettySslContextChannelCredentials.create(context);
    } catch (SSLException e) {
      throw new IllegalStateException(
          "cannot make the TLS context of group " + group + "'s clients: " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return mutual ? "mutual, " + provider.name().toLowerCase(Locale.ROOT) : "off";
  }
}
