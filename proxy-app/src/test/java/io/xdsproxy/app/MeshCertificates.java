package io.xdsproxy.app;

import io.grpc.ChannelCredentials;
import io.grpc.TlsChannelCredentials;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The certificates a deployment of the proxy meets in an Istio-style mesh, made in the test: the
 * mesh's CA (the one a cert-manager CA issuer holds, signing workloads and the proxy alike), the
 * Secret cert-manager writes for the proxy's Certificate, and workloads' SPIFFE certificates.
 */
final class MeshCertificates {

  static final String TRUST_DOMAIN = "cluster.local";

  private final Ca ca;

  MeshCertificates(Path dir) {
    ca = TestCertificates.ca("mesh", dir);
  }

  /**
   * The kubernetes.io/tls Secret cert-manager writes for a Certificate of {@code dnsNames} from a
   * CA issuer: the leaf and its key, and the issuing CA as {@code ca.crt}.
   */
  Map<String, String> tlsSecret(List<String> dnsNames) throws IOException {
    Issued server = ca.issueForHosts("xds-proxy", dnsNames);
    return Map.of(
        "tls.crt", Files.readString(server.cert()),
        "tls.key", Files.readString(server.key()),
        "ca.crt", Files.readString(ca.pem()));
  }

  static String spiffeId(String namespace, String serviceAccount) {
    return "spiffe://" + TRUST_DOMAIN + "/ns/" + namespace + "/sa/" + serviceAccount;
  }

  /** A workload's credentials: its SPIFFE certificate, trusting the mesh's CA for the proxy's. */
  ChannelCredentials workload(String namespace, String serviceAccount) throws IOException {
    Issued certificate =
        ca.issue(namespace + "-" + serviceAccount, spiffeId(namespace, serviceAccount));
    return TlsChannelCredentials.newBuilder()
        .trustManager(ca.pem().toFile())
        .keyManager(certificate.cert().toFile(), certificate.key().toFile())
        .build();
  }

  /** A client that trusts the proxy's certificate and presents none of its own. */
  ChannelCredentials withoutCertificate() throws IOException {
    return TlsChannelCredentials.newBuilder().trustManager(ca.pem().toFile()).build();
  }
}
