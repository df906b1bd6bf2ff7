package io.xdsproxy.upstream.testing;

import io.grpc.TlsServerCredentials;
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
import java.security.interfaces.ECPrivateKey;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.bouncycastle.asn1.ASN1Encodable;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.bouncycastle.util.io.pem.PemObject;

/**
 * Certificate authorities and the certificates they sign, made in the test and written as PEM
 * files, as an operator's would be: a CA bundle, a leaf's chain and its PKCS#8 key.
 */
public final class TestCertificates {

  private static final AtomicLong SERIALS = new AtomicLong(System.currentTimeMillis());

  private TestCertificates() {}

  /** PEM files of one certificate: its chain (leaf first) and its private key. */
  public record Issued(Path cert, Path key) {
    /** TLS for a server presenting this certificate, to add client authentication to. */
    public TlsServerCredentials.Builder serverTls() throws IOException {
      return TlsServerCredentials.newBuilder().keyManager(cert.toFile(), key.toFile());
    }
  }

  /**
   * How a leaf is made: its key's algorithm ("EC" or "RSA"), how the key is written, and how long
   * the certificate is valid from now.
   *
   * @param traditional the key written as openssl's traditional format and cert-manager's default
   *     write it: PKCS#1 for RSA ({@code BEGIN RSA PRIVATE KEY}), SEC1 for EC ({@code BEGIN EC
   *     PRIVATE KEY}); PKCS#8 ({@code BEGIN PRIVATE KEY}) if false
   */
  public record Leaf(String keyAlgorithm, boolean traditional, Duration validity) {
    public static final Leaf DEFAULT = new Leaf("EC", false, Duration.ofDays(1));

    public Leaf withKey(String algorithm, boolean traditionalEncoding) {
      return new Leaf(algorithm, traditionalEncoding, validity);
    }

    public Leaf validFor(Duration duration) {
      return new Leaf(keyAlgorithm, traditional, duration);
    }
  }

  /** A CA that signs leaf certificates; {@link #pem()} is what a peer trusts. */
  public static final class Ca {
    private final String name;
    private final KeyPair keys;
    private final X509Certificate certificate;
    private final Path dir;

    private Ca(String name, Path dir) {
      this.name = name;
      this.dir = dir;
      this.keys = ecKeys();
      X500Name subject = new X500Name("CN=" + name);
      JcaX509v3CertificateBuilder builder = builder(subject, subject, keys, Duration.ofDays(1));
      try {
        builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(true));
        builder.addExtension(
            Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      this.certificate = sign(builder, keys);
    }

    /** The CA's certificate in a PEM file of its own. */
    public Path pem() {
      Path file = dir.resolve(name + "-ca.pem");
      if (!Files.exists(file)) {
        write(file, toPem(certificate));
      }
      return file;
    }

    /**
     * A leaf certificate for {@code name}, valid for TLS servers and clients, with the DNS name
     * {@code localhost}, the IP address 127.0.0.1, and {@code uriSans} as URI names (SPIFFE ids).
     */
    public Issued issue(String name, String... uriSans) {
      return issue(name, Leaf.DEFAULT, uriSans);
    }

    /** {@link #issue(String, String...)}, the leaf made as {@code made} says. */
    public Issued issue(String name, Leaf made, String... uriSans) {
      return issue(name, made, List.of(), uriSans);
    }

    /**
     * A server's leaf for {@code name}, with {@code dnsNames} (a Kubernetes Service's names)
     * besides {@code localhost} and 127.0.0.1.
     */
    public Issued issueForHosts(String name, List<String> dnsNames) {
      return issue(name, Leaf.DEFAULT, dnsNames);
    }

    private Issued issue(String name, Leaf made, List<String> dnsNames, String... uriSans) {
      KeyPair leafKeys = made.keyAlgorithm().equals("RSA") ? rsaKeys() : ecKeys();
      JcaX509v3CertificateBuilder builder =
          builder(
              new X500Name("CN=" + this.name),
              new X500Name("CN=" + name),
              leafKeys,
              made.validity());
      List<GeneralName> names = new ArrayList<>();
      names.add(new GeneralName(GeneralName.dNSName, "localhost"));
      names.add(new GeneralName(GeneralName.iPAddress, "127.0.0.1"));
      for (String dns : dnsNames) {
        names.add(new GeneralName(GeneralName.dNSName, dns));
      }
      for (String uri : uriSans) {
        names.add(new GeneralName(GeneralName.uniformResourceIdentifier, uri));
      }
      try {
        builder.addExtension(
            Extension.subjectAlternativeName,
            false,
            new GeneralNames(names.toArray(GeneralName[]::new)));
        builder.addExtension(Extension.basicConstraints, true, new BasicConstraints(false));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      X509Certificate leaf = sign(builder, keys);
      Path cert = dir.resolve(name + "-" + this.name + ".pem");
      Path key = dir.resolve(name + "-" + this.name + ".key");
      write(cert, toPem(leaf) + toPem(certificate));
      write(
          key,
          toPem(
              made.traditional()
                  ? traditional(leafKeys.getPrivate())
                  : pkcs8(leafKeys.getPrivate())));
      return new Issued(cert, key);
    }
  }

  /** A new CA named {@code name}, writing its files into {@code dir}. */
  public static Ca ca(String name, Path dir) {
    return new Ca(name, dir);
  }

  private static JcaX509v3CertificateBuilder builder(
      X500Name issuer, X500Name subject, KeyPair keys, Duration validity) {
    Instant now = Instant.now();
    return new JcaX509v3CertificateBuilder(
        issuer,
        BigInteger.valueOf(SERIALS.incrementAndGet()),
        Date.from(now.minus(Duration.ofHours(1))),
        Date.from(now.plus(validity)),
        subject,
        keys.getPublic());
  }

  private static X509Certificate sign(X509v3CertificateBuilder builder, KeyPair signer) {
    try {
      return new JcaX509CertificateConverter()
          .getCertificate(
              builder.build(
                  new JcaContentSignerBuilder("SHA256withECDSA").build(signer.getPrivate())));
    } catch (GeneralSecurityException | OperatorCreationException e) {
      throw new IllegalStateException(e);
    }
  }

  private static KeyPair ecKeys() {
    try {
      KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
      generator.initialize(new ECGenParameterSpec("secp256r1"));
      return generator.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static KeyPair rsaKeys() {
    try {
      KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
      generator.initialize(2048);
      return generator.generateKeyPair();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  /** {@code object} (a certificate, a PKCS#8 key, a JCA key in its traditional encoding) in PEM. */
  private static String toPem(Object object) {
    StringWriter text = new StringWriter();
    try (JcaPEMWriter writer = new JcaPEMWriter(text)) {
      writer.writeObject(object);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return text.toString();
  }

  private static void write(Path file, String text) {
    try {
      Files.writeString(file, text);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A private key in its traditional PEM encoding, as openssl and Go's crypto/x509 (cert-manager)
   * write it: PKCS#1 for RSA, which JcaPEMWriter writes of a JCA RSA key; SEC1 for EC, naming its
   * curve, which it does not (the JDK's key leaves the curve to its PKCS#8 wrapper).
   */
  private static Object traditional(PrivateKey key) {
    if (!(key instanceof ECPrivateKey ec)) {
      return key;
    }
    ASN1Encodable curve =
        PrivateKeyInfo.getInstance(key.getEncoded()).getPrivateKeyAlgorithm().getParameters();
    try {
      return new PemObject(
          "EC PRIVATE KEY",
          new org.bouncycastle.asn1.sec.ECPrivateKey(
                  ec.getParams().getOrder().bitLength(), ec.getS(), curve)
              .getEncoded());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A private key as the PKCS#8 PEM object ("BEGIN PRIVATE KEY") a server reads. */
  private static Object pkcs8(PrivateKey key) {
    try {
      return new JcaPKCS8Generator(key, null).generate();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
