package io.xdsproxy.upstream.grpc;

import io.grpc.util.AdvancedTlsX509KeyManager;
import io.grpc.util.AdvancedTlsX509TrustManager;
import io.grpc.util.CertificateUtils;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * TLS certificates and keys read from PEM files, for both sides of the proxy: the xDS server's own
 * certificate and the CA its clients' certificates must chain to, and the control-plane client's
 * trust and certificate. A missing or malformed file is an error naming it when the proxy starts.
 * After that the files are polled, so that certificates rotated on disk (cert-manager, a Kubernetes
 * Secret) are used for new connections without a restart. A change that does not load (a file
 * caught half written, a certificate written before its key) keeps the last good material, is
 * logged once with the file and the reason, and is tried again when the files change again.
 */
public final class TlsFiles {

  /** How often the files are read: a few KiB a second, compared with what was last loaded. */
  public static final Duration POLL = Duration.ofSeconds(1);

  private static final Logger log = LoggerFactory.getLogger(TlsFiles.class);

  private TlsFiles() {}

  /**
   * A manager kept up to date from its files until closed.
   *
   * @param pollNow reads the files now, as the timer does every {@link #POLL}
   */
  public record Watched<M>(M manager, Runnable pollNow, ScheduledFuture<?> polling)
      implements AutoCloseable {
    @Override
    public void close() {
      polling.cancel(false);
    }
  }

  /**
   * What a watched set of files tells as it is loaded, for metrics: the certificates now in use,
   * and each change that did not load (the previous files staying in use).
   */
  public interface Listener {
    /** Tells nothing. */
    Listener NONE =
        new Listener() {
          @Override
          public void loaded(List<X509Certificate> certificates) {}

          @Override
          public void failed() {}
        };

    /** {@code certificates} are in use from now on: at start, and after each change that loaded. */
    void loaded(List<X509Certificate> certificates);

    /** A change to the files did not load; the last good ones stay in use. */
    void failed();
  }

  /**
   * A key manager presenting the certificate chain in {@code certFile} with the private key in
   * {@code keyFile} (PEM: PKCS#8, PKCS#1 or SEC1, see {@link PemKeys}), re-read every {@link #POLL}
   * on {@code timer}; {@code listener} hears of the chain in use and of changes that did not load.
   *
   * @throws IOException naming the file that cannot be read or parsed, or both when they do not
   *     match
   */
  public static Watched<AdvancedTlsX509KeyManager> identity(
      Path certFile, Path keyFile, ScheduledExecutorService timer, Listener listener)
      throws IOException {
    AdvancedTlsX509KeyManager manager = new AdvancedTlsX509KeyManager();
    Poller poller =
        new Poller(
            List.of(certFile, keyFile),
            listener,
            contents -> {
              X509Certificate[] chain = certificates(certFile, contents.get(0));
              PrivateKey key = privateKey(keyFile, contents.get(1));
              checkPair(chain[0], key, certFile, keyFile);
              manager.updateIdentityCredentials(chain, key);
              return List.of(chain);
            });
    return new Watched<>(manager, poller, poller.start(timer));
  }

  /**
   * A trust manager trusting the CA certificates in {@code caFile}, re-read every {@link #POLL} on
   * {@code timer}. With {@code checkHostName} the peer's certificate must also name the host
   * connected to (a client's check of its server). {@code listener} hears of the CA certificates in
   * use and of changes that did not load.
   *
   * @throws IOException naming the file when it cannot be read or holds no certificate
   */
  public static Watched<AdvancedTlsX509TrustManager> trust(
      Path caFile, boolean checkHostName, ScheduledExecutorService timer, Listener listener)
      throws IOException {
    AdvancedTlsX509TrustManager manager;
    try {
      manager =
          AdvancedTlsX509TrustManager.newBuilder()
              .setVerification(
                  checkHostName
                      ? AdvancedTlsX509TrustManager.Verification
                          .CERTIFICATE_AND_HOST_NAME_VERIFICATION
                      : AdvancedTlsX509TrustManager.Verification.CERTIFICATE_ONLY_VERIFICATION)
              .build();
    } catch (GeneralSecurityException e) {
      throw new IOException("cannot make a trust manager: " + e.getMessage(), e);
    }
    Poller poller =
        new Poller(
            List.of(caFile),
            listener,
            contents -> {
              X509Certificate[] cas = certificates(caFile, contents.get(0));
              try {
                manager.updateTrustCredentials(cas);
              } catch (GeneralSecurityException e) {
                throw new IOException(caFile + ": " + e.getMessage(), e);
              }
              return List.of(cas);
            });
    return new Watched<>(manager, poller, poller.start(timer));
  }

  /**
   * The certificates in the PEM file {@code file}.
   *
   * @throws IOException naming the file when it cannot be read or holds no certificate
   */
  public static X509Certificate[] certificates(Path file) throws IOException {
    return certificates(file, read(file));
  }

  /**
   * The private key in the PEM file {@code file}: PKCS#8, PKCS#1 (RSA) or SEC1 (EC), unencrypted.
   *
   * @throws IOException naming the file when it cannot be read or holds no such key, and what to do
   *     about an encrypted key or one that cannot be converted
   */
  public static PrivateKey privateKey(Path file) throws IOException {
    return privateKey(file, read(file));
  }

  /**
   * Checks that {@code keyFile}'s key is the one {@code certFile}'s certificate was issued for.
   *
   * @throws IOException naming both files when it is not, or when either cannot be read
   */
  public static void checkPair(Path certFile, Path keyFile) throws IOException {
    checkPair(certificates(certFile)[0], privateKey(keyFile), certFile, keyFile);
  }

  private static byte[] read(Path file) throws IOException {
    try {
      return Files.readAllBytes(file);
    } catch (IOException e) {
      throw new IOException(
          "cannot read "
              + file
              + ": "
              + e.getClass().getSimpleName()
              + (e.getMessage() == null || e.getMessage().equals(file.toString())
                  ? ""
                  : " " + e.getMessage()),
          e);
    }
  }

  private static X509Certificate[] certificates(Path file, byte[] pem) throws IOException {
    if (!new String(pem, StandardCharsets.US_ASCII).contains("-----BEGIN CERTIFICATE-----")) {
      throw new IOException(file + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
    }
    X509Certificate[] certificates;
    try {
      certificates = CertificateUtils.getX509Certificates(new ByteArrayInputStream(pem));
    } catch (GeneralSecurityException | RuntimeException e) {
      throw new IOException(file + " is not a PEM certificate file: " + e.getMessage(), e);
    }
    if (certificates.length == 0) {
      throw new IOException(file + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
    }
    return certificates;
  }

  private static PrivateKey privateKey(Path file, byte[] pem) throws IOException {
    return PemKeys.read(file, pem);
  }

  /** Signs with {@code key} and verifies with {@code leaf}'s public key: they belong together. */
  private static void checkPair(X509Certificate leaf, PrivateKey key, Path certFile, Path keyFile)
      throws IOException {
    String algorithm =
        switch (key.getAlgorithm()) {
          case "RSA" -> "SHA256withRSA";
          case "EC" -> "SHA256withECDSA";
          default -> null;
        };
    if (algorithm == null) {
      return;
    }
    boolean matches;
    try {
      byte[] probe = "xds-proxy".getBytes(StandardCharsets.US_ASCII);
      Signature signer = Signature.getInstance(algorithm);
      signer.initSign(key);
      signer.update(probe);
      byte[] signature = signer.sign();
      Signature verifier = Signature.getInstance(algorithm);
      verifier.initVerify(leaf.getPublicKey());
      verifier.update(probe);
      matches = verifier.verify(signature);
    } catch (GeneralSecurityException e) {
      matches = false;
    }
    if (!matches) {
      throw new IOException(
          "the key in "
              + keyFile
              + " is not the key of the certificate in "
              + certFile
              + " ("
              + leaf.getSubjectX500Principal().getName()
              + ")");
    }
  }

  /**
   * What to do with the files' contents; returns the certificates now in use, throws when they do
   * not load.
   */
  private interface Load {
    List<X509Certificate> load(List<byte[]> contents) throws IOException;
  }

  /** Reads a set of files now and then, and loads them when their contents change. */
  private static final class Poller implements Runnable {
    private final List<Path> files;
    private final Listener listener;
    private final Load load;

    /** The contents last tried, loaded or not: a bad change is logged once, not every second. */
    private List<byte[]> tried;

    /** The last problem logged, so that a file missing for a while is logged once too. */
    private String reported;

    /**
     * Whether {@link #reported} is of files that could not be read, not of contents that did not
     * load.
     */
    private boolean reportedUnreadable;

    Poller(List<Path> files, Listener listener, Load load) {
      this.files = files;
      this.listener = listener;
      this.load = load;
    }

    /** Loads the files now, failing if they do not load, then polls them on {@code timer}. */
    ScheduledFuture<?> start(ScheduledExecutorService timer) throws IOException {
      tried = readAll();
      listener.loaded(load.load(tried));
      return timer.scheduleWithFixedDelay(
          this, POLL.toMillis(), POLL.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Synchronized: the timer and {@link Watched#pollNow} may both call it. */
    @Override
    public synchronized void run() {
      List<byte[]> contents;
      try {
        contents = readAll();
      } catch (IOException e) {
        // A file missing for a while fails every poll: logged and counted once, not every second.
        if (report(e)) {
          reportedUnreadable = true;
          listener.failed();
        }
        return;
      }
      if (same(contents, tried)) {
        // Readable again as they were (a file back after going missing): a later failure is news.
        if (reportedUnreadable) {
          reported = null;
          reportedUnreadable = false;
        }
        return;
      }
      tried = contents;
      try {
        listener.loaded(load.load(contents));
        reported = null;
        log.info("TLS files reloaded: {}", files);
      } catch (IOException | RuntimeException e) {
        report(e);
        listener.failed();
      }
    }

    /** Logs {@code e} unless it was the last problem logged; returns whether it was logged. */
    private boolean report(Exception e) {
      if (String.valueOf(e.getMessage()).equals(reported)) {
        return false;
      }
      reported = String.valueOf(e.getMessage());
      log.warn(
          "TLS files {} changed but do not load, keeping the previous ones: {}", files, reported);
      return true;
    }

    private List<byte[]> readAll() throws IOException {
      List<byte[]> contents = new ArrayList<>();
      for (Path file : files) {
        contents.add(read(file));
      }
      return contents;
    }

    private static boolean same(List<byte[]> a, List<byte[]> b) {
      for (int i = 0; i < a.size(); i++) {
        if (!Arrays.equals(a.get(i), b.get(i))) {
          return false;
        }
      }
      return true;
    }
  }
}
