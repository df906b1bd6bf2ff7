package io.xdsproxy.app.testing;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.upstream.grpc.TlsFiles;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.Optional;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/** REST-JSON polls of the proxy's REST port, over HTTPS with a client certificate or plain HTTP. */
public final class RestPolls {

  private static final Duration WAIT = Duration.ofSeconds(10);

  private RestPolls() {}

  /** A client trusting {@code ca} (PEM), presenting {@code certificate} if given. */
  public static HttpClient https(Path ca, Optional<Issued> certificate) throws Exception {
    KeyStore trusted = KeyStore.getInstance("PKCS12");
    trusted.load(null, null);
    trusted.setCertificateEntry("xds-ca", TlsFiles.certificates(ca)[0]);
    TrustManagerFactory trust =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(trusted);
    KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    char[] password = "test".toCharArray();
    KeyStore own = KeyStore.getInstance("PKCS12");
    own.load(null, null);
    if (certificate.isPresent()) {
      own.setKeyEntry(
          "client",
          TlsFiles.privateKey(certificate.get().key()),
          password,
          TlsFiles.certificates(certificate.get().cert()));
    }
    keys.init(own, password);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(keys.getKeyManagers(), trust.getTrustManagers(), null);
    return HttpClient.newBuilder()
        .sslContext(context)
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(WAIT)
        .build();
  }

  /**
   * A poll of {@code type} ({@code clusters}, {@code secrets}, …) on the REST port {@code port}, as
   * node {@code nodeId} of {@code cluster}, for {@code names} (JSON strings, comma-separated).
   */
  public static HttpResponse<String> post(
      HttpClient client,
      String scheme,
      int port,
      String type,
      String nodeId,
      String cluster,
      String names)
      throws Exception {
    String body =
        "{\"node\": {\"id\": \""
            + nodeId
            + "\", \"cluster\": \""
            + cluster
            + "\"}, \"resource_names\": ["
            + names
            + "]}";
    return client.send(
        HttpRequest.newBuilder(
                URI.create(scheme + "://127.0.0.1:" + port + "/v3/discovery:" + type))
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .timeout(WAIT)
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** The DiscoveryResponse of a poll answered 200. */
  public static DiscoveryResponse parse(HttpResponse<String> response) throws Exception {
    assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
    DiscoveryResponse.Builder parsed = DiscoveryResponse.newBuilder();
    JsonFormat.parser().usingTypeRegistry(ApiTypes.json()).merge(response.body(), parsed);
    return parsed.build();
  }
}
