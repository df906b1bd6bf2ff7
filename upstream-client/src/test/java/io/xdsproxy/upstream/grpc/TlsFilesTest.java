package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.util.AdvancedTlsX509KeyManager;
import io.xdsproxy.upstream.testing.TestCertificates;
import io.xdsproxy.upstream.testing.TestCertificates.Ca;
import io.xdsproxy.upstream.testing.TestCertificates.Issued;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.cert.X509Certificate;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Certificate files loaded at start and reloaded when they change, the last good ones kept when they do not load. */
class TlsFilesTest {

  @TempDir
  Path dir;

  private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

  @AfterEach
  void stop() {
    timer.shutdownNow();
  }

  private static String subject(AdvancedTlsX509KeyManager manager) {
    X509Certificate[] chain = manager.getCertificateChain(manager.chooseEngineServerAlias("EC", null, null));
    return chain[0].getSubjectX500Principal().getName();
  }

  private static void copy(Path from, Path to) throws IOException {
    Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
  }

  @Test
  void aHalfWrittenCertificateOrOneWithoutItsKeyKeepsTheLastGoodPairUntilBothAreWhole() throws Exception {
    Ca ca = TestCertificates.ca("ca", dir);
    Issued before = ca.issue("before");
    Issued after = ca.issue("after");
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    copy(before.cert(), cert);
    copy(before.key(), key);
    try (var watched = TlsFiles.identity(cert, key, timer)) {
      assertThat(subject(watched.manager())).isEqualTo("CN=before");

      Files.writeString(cert, Files.readString(after.cert()).substring(0, 100));
      watched.pollNow().run();
      assertThat(subject(watched.manager())).as("after a half-written certificate").isEqualTo("CN=before");

      copy(after.cert(), cert);
      watched.pollNow().run();
      assertThat(subject(watched.manager())).as("with the new certificate and the old key").isEqualTo("CN=before");

      copy(after.key(), key);
      watched.pollNow().run();
      assertThat(subject(watched.manager())).isEqualTo("CN=after");
    }
  }

  @Test
  void aReplacedCaFileIsTrustedInsteadOfTheOldOne() throws Exception {
    Path caFile = dir.resolve("ca.pem");
    copy(TestCertificates.ca("first", dir).pem(), caFile);
    try (var watched = TlsFiles.trust(caFile, false, timer)) {
      assertThat(watched.manager().getAcceptedIssuers()).extracting(c -> c.getSubjectX500Principal().getName())
          .containsExactly("CN=first");

      copy(TestCertificates.ca("second", dir).pem(), caFile);
      watched.pollNow().run();

      assertThat(watched.manager().getAcceptedIssuers()).extracting(c -> c.getSubjectX500Principal().getName())
          .containsExactly("CN=second");
    }
  }

  @Test
  void aMissingOrMismatchedFileAtStartIsAnErrorNamingIt() throws Exception {
    Ca ca = TestCertificates.ca("ca", dir);
    Issued one = ca.issue("one");
    Issued other = ca.issue("other");

    assertThatThrownBy(() -> TlsFiles.identity(dir.resolve("missing.crt"), one.key(), timer))
        .isInstanceOf(IOException.class).hasMessageContaining("missing.crt");
    assertThatThrownBy(() -> TlsFiles.identity(one.key(), one.key(), timer))
        .isInstanceOf(IOException.class).hasMessageContaining(one.key().toString()).hasMessageContaining("no PEM certificate");
    assertThatThrownBy(() -> TlsFiles.identity(one.cert(), other.key(), timer))
        .isInstanceOf(IOException.class).hasMessageContaining("is not the key of the certificate");
  }
}
