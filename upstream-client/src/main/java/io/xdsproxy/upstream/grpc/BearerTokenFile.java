package io.xdsproxy.upstream.grpc;

import io.grpc.CallCredentials;
import io.grpc.Metadata;
import io.grpc.SecurityLevel;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A bearer token read from a file, sent as {@code authorization: Bearer …} on every call to the
 * control plane: how istiod's secure port (15012) and control planes behind an authenticating
 * gateway take a client's identity, a Kubernetes service-account token as istio-agent sends it.
 *
 * <p>The file is read again for each call, so a token rotated on disk (a projected service-account
 * token, replaced before it expires) is what the next stream sends; an xDS stream lives long, and
 * sends its token once, when it starts. A file that cannot be read or holds no token at start is an
 * error naming it; later, the last good token is sent and the problem logged once. The token is
 * never logged.
 *
 * <p>It is sent only on a connection with privacy and integrity (TLS), unless {@code
 * overPlaintext}: a call over plaintext fails with {@code UNAUTHENTICATED} naming the flag, and the
 * token stays unsent.
 */
final class BearerTokenFile extends CallCredentials {

  private static final Logger log = LoggerFactory.getLogger(BearerTokenFile.class);

  static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  /** Far above any service-account token (about 1 KiB); a file larger than this is not one. */
  static final int MAX_TOKEN_BYTES = 64 * 1024;

  private final Path file;
  private final boolean overPlaintext;
  private String token;

  /** The last problem logged, so a file missing for a while is logged once. */
  private String reported;

  private BearerTokenFile(Path file, boolean overPlaintext, String token) {
    this.file = file;
    this.overPlaintext = overPlaintext;
    this.token = token;
  }

  /**
   * The token in {@code file}, read now.
   *
   * @throws IOException naming the file, when it cannot be read or holds no token
   */
  static BearerTokenFile read(Path file, boolean overPlaintext) throws IOException {
    return new BearerTokenFile(file, overPlaintext, tokenIn(file));
  }

  @Override
  public void applyRequestMetadata(
      RequestInfo request, Executor appExecutor, MetadataApplier applier) {
    if (request.getSecurityLevel() != SecurityLevel.PRIVACY_AND_INTEGRITY && !overPlaintext) {
      applier.fail(
          Status.UNAUTHENTICATED.withDescription(
              "xds-proxy sends its upstream token ("
                  + file
                  + ") only over TLS: the connection to "
                  + request.getAuthority()
                  + " is plaintext (--upstream-token-over-plaintext true sends it anyway)"));
      return;
    }
    appExecutor.execute(
        () -> {
          Metadata headers = new Metadata();
          headers.put(AUTHORIZATION, "Bearer " + current());
          applier.apply(headers);
        });
  }

  /** The token in the file now, or the last good one while the file has none. */
  synchronized String current() {
    try {
      token = tokenIn(file);
      reported = null;
    } catch (IOException e) {
      if (!String.valueOf(e.getMessage()).equals(reported)) {
        reported = String.valueOf(e.getMessage());
        log.warn("upstream token: {}; the last good token is sent", reported);
      }
    }
    return token;
  }

  /**
   * The token {@code file} holds: its contents without surrounding white space (a token file ends
   * in a newline as often as not), visible ASCII only, as an HTTP header value must be.
   */
  private static String tokenIn(Path file) throws IOException {
    long size = Files.size(file);
    if (size > MAX_TOKEN_BYTES) {
      throw new IOException(
          "token file "
              + file
              + " holds "
              + size
              + " bytes, more than a token's "
              + MAX_TOKEN_BYTES);
    }
    String token = new String(Files.readAllBytes(file), StandardCharsets.ISO_8859_1).strip();
    if (token.isEmpty()) {
      throw new IOException("token file " + file + " is empty");
    }
    for (int i = 0; i < token.length(); i++) {
      char c = token.charAt(i);
      if (c < 0x21 || c > 0x7e) {
        throw new IOException(
            "token file " + file + " holds a character a header cannot carry at " + i);
      }
    }
    return token;
  }
}
