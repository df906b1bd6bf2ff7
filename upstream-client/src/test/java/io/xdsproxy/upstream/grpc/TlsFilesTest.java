package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.util.AdvancedTlsX509KeyManager;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import io.xdsproxy.upstream.testing.TestCertificates.Leaf;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.openssl.PKCS8Generator;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.openssl.jcajce.JceOpenSSLPKCS8EncryptorBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Certificate files loaded at start and reloaded when they change, the last good ones kept when
 * they do not load.
 */
class TlsFilesTest {

  @TempDir Path dir;

  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  @AfterEach
  void stop() {
    timer.shutdownNow();
  }

  private static String subject(AdvancedTlsX509KeyManager manager) {
    X509Certificate[] chain =
        manager.getCertificateChain(manager.chooseEngineServerAlias("EC", null, null));
    return chain[0].getSubjectX500Principal().getName();
  }

  private static void copy(Path from, Path to) throws IOException {
    Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
  }

  @Test
  void aHalfWrittenCertificateOrOneWithoutItsKeyKeepsTheLastGoodPairUntilBothAreWhole()
      throws Exception {
    Ca ca = TestCertificates.ca("ca", dir);
    Issued before = ca.issue("before");
    Issued after = ca.issue("after");
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    copy(before.cert(), cert);
    copy(before.key(), key);
    try (var watched = TlsFiles.identity(cert, key, timer, TlsFiles.Listener.NONE)) {
      assertThat(subject(watched.manager())).isEqualTo("CN=before");

      Files.writeString(cert, Files.readString(after.cert()).substring(0, 100));
      watched.pollNow().run();
      assertThat(subject(watched.manager()))
          .as("after a half-written certificate")
          .isEqualTo("CN=before");

      copy(after.cert(), cert);
      watched.pollNow().run();
      assertThat(subject(watched.manager()))
          .as("with the new certificate and the old key")
          .isEqualTo("CN=before");

      copy(after.key(), key);
      watched.pollNow().run();
      assertThat(subject(watched.manager())).isEqualTo("CN=after");
    }
  }

  @Test
  void aReplacedCaFileIsTrustedInsteadOfTheOldOne() throws Exception {
    Path caFile = dir.resolve("ca.pem");
    copy(TestCertificates.ca("first", dir).pem(), caFile);
    try (var watched = TlsFiles.trust(caFile, false, timer, TlsFiles.Listener.NONE)) {
      assertThat(watched.manager().getAcceptedIssuers())
          .extracting(c -> c.getSubjectX500Principal().getName())
          .containsExactly("CN=first");

      copy(TestCertificates.ca("second", dir).pem(), caFile);
      watched.pollNow().run();

      assertThat(watched.manager().getAcceptedIssuers())
          .extracting(c -> c.getSubjectX500Principal().getName())
          .containsExactly("CN=second");
    }
  }

  @Test
  void aMissingOrMismatchedFileAtStartIsAnErrorNamingIt() throws Exception {
    Ca ca = TestCertificates.ca("ca", dir);
    Issued one = ca.issue("one");
    Issued other = ca.issue("other");

    assertThatThrownBy(
            () ->
                TlsFiles.identity(
                    dir.resolve("missing.crt"), one.key(), timer, TlsFiles.Listener.NONE))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("missing.crt");
    assertThatThrownBy(() -> TlsFiles.identity(one.key(), one.key(), timer, TlsFiles.Listener.NONE))
        .isInstanceOf(IOException.class)
        .hasMessageContaining(one.key().toString())
        .hasMessageContaining("no PEM certificate");
    assertThatThrownBy(
            () -> TlsFiles.identity(one.cert(), other.key(), timer, TlsFiles.Listener.NONE))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("is not the key of the certificate");
  }

  @Test
  void traditionalRsaAndEcKeysAreReadAsTheKeysOfTheirCertificates() throws Exception {
    Ca ca = TestCertificates.ca("ca", dir);
    for (String algorithm : List.of("RSA", "EC")) {
      Issued issued =
          ca.issue(
              algorithm.toLowerCase(java.util.Locale.ROOT), Leaf.DEFAULT.withKey(algorithm, true));

      // Signs with the key read and verifies with the certificate's public key.
      TlsFiles.checkPair(issued.cert(), issued.key());
      assertThat(TlsFiles.privateKey(issued.key()).getAlgorithm()).isEqualTo(algorithm);
    }
  }

  @Test
  void anEcKeyThatDoesNotNameItsCurveIsRefusedNamingTheCertManagerSetting() throws Exception {
    Path key = dir.resolve("no-curve.key");
    KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
    generator.initialize(new ECGenParameterSpec("secp256r1"));
    // The JDK's EC key leaves its curve to its PKCS#8 wrapper: written as SEC1, it has none.
    try (var writer = new JcaPEMWriter(Files.newBufferedWriter(key))) {
      writer.writeObject(generator.generateKeyPair().getPrivate());
    }
    assertThat(Files.readString(key)).startsWith("-----BEGIN EC PRIVATE KEY-----");

    assertThatThrownBy(() -> TlsFiles.privateKey(key))
        .isInstanceOf(IOException.class)
        .hasMessageContaining(key.toString())
        .hasMessageContaining("spec.privateKey.encoding: PKCS8");
  }

  @Test
  void anEncryptedPkcs8KeyIsRefusedSayingHowToDecryptIt() throws Exception {
    Path key = dir.resolve("encrypted.key");
    KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
    generator.initialize(2048);
    try (var writer = new JcaPEMWriter(Files.newBufferedWriter(key))) {
      writer.writeObject(
          new JcaPKCS8Generator(
              generator.generateKeyPair().getPrivate(),
              new JceOpenSSLPKCS8EncryptorBuilder(PKCS8Generator.AES_256_CBC)
                  .setProvider(new BouncyCastleProvider())
                  .setPassword("secret".toCharArray())
                  .build()));
    }
    assertThat(Files.readString(key)).startsWith("-----BEGIN ENCRYPTED PRIVATE KEY-----");

    assertThatThrownBy(() -> TlsFiles.privateKey(key))
        .isInstanceOf(IOException.class)
        .hasMessageContaining(key.toString())
        .hasMessageContaining("encrypted")
        .hasMessageContaining("openssl pkey");
  }

  @Test
  void theListenerHearsOfTheCertificatesInUseAndOfEachChangeThatDoesNotLoad() throws Exception {
    Path caFile = dir.resolve("ca.pem");
    copy(TestCertificates.ca("first", dir).pem(), caFile);
    List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
    TlsFiles.Listener listener =
        new TlsFiles.Listener() {
          @Override
          public void loaded(List<X509Certificate> certificates) {
            heard.add(certificates.get(0).getSubjectX500Principal().getName());
          }

          @Override
          public void failed() {
            heard.add("failed");
          }
        };
    try (var watched = TlsFiles.trust(caFile, false, timer, listener)) {
      Files.writeString(caFile, "half a certificate");
      watched.pollNow().run();
      watched.pollNow().run();
      Files.writeString(caFile, "another half");
      watched.pollNow().run();
      copy(TestCertificates.ca("second", dir).pem(), caFile);
      watched.pollNow().run();

      assertThat(heard).containsExactly("CN=first", "failed", "failed", "CN=second");
    }
  }

  @Test
  void aFileThatGoesMissingAgainAfterComingBackUnchangedIsCountedAgain() throws Exception {
    Path caFile = dir.resolve("ca.pem");
    Path kept = dir.resolve("kept.pem");
    copy(TestCertificates.ca("first", dir).pem(), caFile);
    copy(caFile, kept);
    List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
    TlsFiles.Listener listener =
        new TlsFiles.Listener() {
          @Override
          public void loaded(List<X509Certificate> certificates) {
            heard.add("loaded");
          }

          @Override
          public void failed() {
            heard.add("failed");
          }
        };
    try (var watched = TlsFiles.trust(caFile, false, timer, listener)) {
      Files.delete(caFile);
      watched.pollNow().run();
      watched.pollNow().run();
      copy(kept, caFile);
      watched.pollNow().run();
      Files.delete(caFile);
      watched.pollNow().run();

      assertThat(heard)
          .as("missing once (told once), back unchanged (nothing to load), missing again")
          .containsExactly("loaded", "failed", "failed");
    }
  }
}
