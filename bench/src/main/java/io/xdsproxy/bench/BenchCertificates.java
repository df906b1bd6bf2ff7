package io.xdsproxy.bench;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.List;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * The certificates of one benchmark run, made afresh as a mesh's CA would issue them, EC P-256
 * throughout: a CA, the server's certificate (for {@code localhost} and 127.0.0.1, what the load
 * clients connect to) written as PEM files the servers read, and one client certificate per node
 * group, held in memory for the load clients: the clients of a group are replicas of one workload,
 * so they share its service account's identity, a SPIFFE id naming the group as namespace and
 * service account ({@link #spiffeId}).
 */
final class BenchCertificates {

  /** The trust domain of the clients' SPIFFE ids. */
  static final String TRUST_DOMAIN = "bench.local";

  /** A certificate and its key. */
  record Identity(PrivateKey key, X509Certificate[] chain) {}

  private final Path dir;
  private final KeyPair caKeys;
  private final X509Certificate ca;
  private long serial = System.currentTimeMillis();

  private BenchCertificates(Path dir) {
    this.dir = dir;
    this.caKeys = ecKeys();
    X500Name name = new X500Name("CN=xds-bench CA");
    JcaX509v3CertificateBuilder builder = builder(name, name, caKeys);
    try {
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
      builder.addExtension(
          Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
    } catch (CertIOException e) {
      throw new UncheckedIOException(e);
    }
    this.ca = sign(builder);
  }

  /**
   * A new CA whose server certificate and CA certificate are written into {@code dir}: {@link
   * #caFile}, {@link #serverCertFile}, {@link #serverKeyFile}.
   */
  static BenchCertificates make(Path dir) throws IOException {
    BenchCertificates certificates = new BenchCertificates(dir);
    Identity server =
        certificates.issue(
            "xds-bench server",
            List.of(
                new GeneralName(GeneralName.dNSName, "localhost"),
                new GeneralName(GeneralName.iPAddress, "127.0.0.1")));
    write(certificates.caFile(), pem(certificates.ca));
    write(certificates.serverCertFile(), pem(server.chain()[0]) + pem(certificates.ca));
    write(certificates.serverKeyFile(), pem(new JcaPKCS8Generator(server.key(), null).generate()));
    return certificates;
  }

  /** The SPIFFE id of node group {@code group}'s workload: the group as namespace and account. */
  static String spiffeId(String group) {
    return "spiffe://" + TRUST_DOMAIN + "/ns/" + group + "/sa/" + group;
  }

  Path caFile() {
    return dir.resolve("ca.pem");
  }

  Path serverCertFile() {
    return dir.resolve("server.pem");
  }

  Path serverKeyFile() {
    return dir.resolve("server.key");
  }

  X509Certificate ca() {
    return ca;
  }

  /** A new client certificate for node group {@code group}, its SPIFFE id its only name. */
  Identity client(String group) {
    return issue(
        group, List.of(new GeneralName(GeneralName.uniformResourceIdentifier, spiffeId(group))));
  }

  private Identity issue(String name, List<GeneralName> names) {
    KeyPair keys = ecKeys();
    JcaX509v3CertificateBuilder builder =
        builder(new X500Name("CN=xds-bench CA"), new X500Name("CN=" + name), keys);
    try {
      builder.addExtension(
          Extension.subjectAlternativeName,
          false,
          new GeneralNames(names.toArray(GeneralName[]::new)));
      builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
    } catch (CertIOException e) {
      throw new UncheckedIOException(e);
    }
    return new Identity(keys.getPrivate(), new X509Certificate[] {sign(builder), ca});
  }

  private JcaX509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair keys) {
    Instant now = Instant.now();
    return new JcaX509v3CertificateBuilder(
        issuer,
        BigInteger.valueOf(serial++),
        Date.from(now.minus(Duration.ofHours(1))),
        Date.from(now.plus(Duration.ofDays(2))),
        subject,
        keys.getPublic());
  }

  private X509Certificate sign(JcaX509v3CertificateBuilder builder) {
    try {
      return new JcaX509CertificateConverter()
          .getCertificate(
              builder.build(
                  new JcaContentSignerBuilder("SHA256withECDSA").build(caKeys.getPrivate())));
    } catch (GeneralSecurityException | OperatorCreationException e) {
      throw new IllegalStateException("cannot sign a bench certificate", e);
    }
  }

  private static KeyPair ecKeys() {
    try {
      KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
      generator.initialize(new ECGenParameterSpec("secp256r1"));
      return generator.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("cannot make an EC P-256 key", e);
    }
  }

  private static String pem(Object object) throws IOException {
    StringWriter text = new StringWriter();
    try (JcaPEMWriter writer = new JcaPEMWriter(text)) {
      writer.writeObject(object);
    }
    return text.toString();
  }

  private static void write(Path file, String text) throws IOException {
    Files.writeString(file, text);
  }
}
