package io.xdsproxy.upstream.grpc;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Unencrypted private keys in the PEM encodings operators' tools write: PKCS#8 ({@code BEGIN
 * PRIVATE KEY}), and the traditional ones that are cert-manager's default and openssl's older
 * output, PKCS#1 for RSA ({@code BEGIN RSA PRIVATE KEY}, RFC 8017 A.1.2) and SEC1 for EC ({@code
 * BEGIN EC PRIVATE KEY}, RFC 5915). The JDK reads PKCS#8 only: a traditional key is wrapped into
 * the PKCS#8 structure (RFC 5208 {@code PrivateKeyInfo}) that carries it unchanged, naming its
 * algorithm, and for EC its curve, taken from the key's own parameters.
 */
final class PemKeys {

  private static final Pattern BLOCK =
      Pattern.compile("-----BEGIN ([A-Z ]+)-----\\R(.*?)-----END \\1-----", Pattern.DOTALL);

  /**
   * rsaEncryption (RFC 8017), with its NULL parameters, as a DER AlgorithmIdentifier's contents.
   */
  private static final byte[] RSA_ALGORITHM =
      concat(
          oid(
              new byte[] {
                (byte) 0x2a, (byte) 0x86, 0x48, (byte) 0x86, (byte) 0xf7, 0x0d, 0x01, 0x01, 0x01
              }),
          new byte[] {0x05, 0x00});

  /** id-ecPublicKey (RFC 5480), without the curve that follows it. */
  private static final byte[] EC_ALGORITHM =
      oid(new byte[] {0x2a, (byte) 0x86, 0x48, (byte) 0xce, 0x3d, 0x02, 0x01});

  /** cert-manager's Certificate field that makes it write PKCS#8: the one line to change. */
  static final String CERT_MANAGER_HINT =
      "in a cert-manager Certificate, set spec.privateKey.encoding: PKCS8";

  private PemKeys() {}

  /**
   * The private key in {@code pem}, the contents of {@code file}.
   *
   * @throws IOException naming the file and, when the key is encrypted or cannot be converted, what
   *     to do about it
   */
  static PrivateKey read(Path file, byte[] pem) throws IOException {
    String text = new String(pem, StandardCharsets.US_ASCII);
    Matcher block = BLOCK.matcher(text);
    while (block.find()) {
      String label = block.group(1);
      String body = block.group(2);
      switch (label) {
        case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY" -> {
          if (body.contains("ENCRYPTED")) {
            throw encrypted(file);
          }
          byte[] der = decode(file, body);
          return switch (label) {
            case "RSA PRIVATE KEY" -> generate(file, "RSA", pkcs8(RSA_ALGORITHM, der));
            case "EC PRIVATE KEY" ->
                generate(file, "EC", pkcs8(concat(EC_ALGORITHM, curveOf(file, der)), der));
            default -> pkcs8Key(file, der);
          };
        }
        case "ENCRYPTED PRIVATE KEY" -> throw encrypted(file);
        default -> {}
      }
    }
    throw new IOException(
        file
            + " holds no PEM private key (-----BEGIN PRIVATE KEY-----, or RSA PRIVATE KEY"
            + " or EC PRIVATE KEY)");
  }

  private static IOException encrypted(Path file) {
    return new IOException(
        file
            + " holds an encrypted private key; the proxy reads unencrypted keys (keep the file"
            + " in a Kubernetes Secret): decrypt it with openssl pkey -in "
            + file
            + " -out <new file>");
  }

  private static byte[] decode(Path file, String body) throws IOException {
    try {
      return Base64.getMimeDecoder().decode(body);
    } catch (IllegalArgumentException e) {
      throw new IOException(
          file + " holds a private key whose base64 cannot be read: " + e.getMessage(), e);
    }
  }

  /** A PKCS#8 key says its algorithm; RSA and EC are the ones TLS certificates use. */
  private static PrivateKey pkcs8Key(Path file, byte[] der) throws IOException {
    for (String algorithm : new String[] {"RSA", "EC"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
      } catch (GeneralSecurityException e) {
        // Not this algorithm: the next one.
      }
    }
    throw new IOException(file + " holds no RSA or EC private key that can be read");
  }

  private static PrivateKey generate(Path file, String algorithm, byte[] pkcs8) throws IOException {
    try {
      return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(pkcs8));
    } catch (GeneralSecurityException e) {
      throw new IOException(
          file
              + " holds an "
              + algorithm
              + " private key that cannot be read ("
              + e.getMessage()
              + "); write it as PKCS#8: "
              + CERT_MANAGER_HINT
              + ", or convert it with openssl pkcs8 -topk8 -nocrypt -in "
              + file,
          e);
    }
  }

  /**
   * The named curve of a SEC1 {@code ECPrivateKey}: its {@code [0] parameters}, an OBJECT
   * IDENTIFIER, as DER. A key without them (RFC 5915 makes them optional) cannot be converted here.
   */
  private static byte[] curveOf(Path file, byte[] sec1) throws IOException {
    try {
      Der key = new Der(sec1, 0).enter(0x30);
      key.skip(0x02); // version
      key.skip(0x04); // privateKey
      while (key.hasMore()) {
        if (key.tag() == 0xa0) {
          Der parameters = key.enter(0xa0);
          if (parameters.tag() == 0x06) {
            return parameters.element();
          }
          break;
        }
        key.skip(key.tag());
      }
    } catch (IndexOutOfBoundsException | IllegalArgumentException e) {
      throw new IOException(
          file + " holds an EC PRIVATE KEY that is not valid DER (" + e.getMessage() + ")", e);
    }
    throw new IOException(
        file
            + " holds an EC PRIVATE KEY that does not name its curve; write it as PKCS#8: "
            + CERT_MANAGER_HINT
            + ", or convert it with openssl pkcs8 -topk8 -nocrypt -in "
            + file);
  }

  /** {@code PrivateKeyInfo ::= SEQUENCE { version 0, AlgorithmIdentifier, OCTET STRING key }}. */
  private static byte[] pkcs8(byte[] algorithm, byte[] key) {
    return tlv(0x30, concat(new byte[] {0x02, 0x01, 0x00}, tlv(0x30, algorithm), tlv(0x04, key)));
  }

  private static byte[] oid(byte[] contents) {
    return tlv(0x06, contents);
  }

  private static byte[] tlv(int tag, byte[] contents) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(tag);
    int length = contents.length;
    if (length < 0x80) {
      out.write(length);
    } else {
      int bytes = (Integer.SIZE - Integer.numberOfLeadingZeros(length) + 7) / 8;
      out.write(0x80 | bytes);
      for (int i = bytes - 1; i >= 0; i--) {
        out.write(length >>> (8 * i));
      }
    }
    out.writeBytes(contents);
    return out.toByteArray();
  }

  private static byte[] concat(byte[]... parts) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (byte[] part : parts) {
      out.writeBytes(part);
    }
    return out.toByteArray();
  }

  /**
   * A cursor over the DER elements of one constructed value: just what reading SEC1's curve takes.
   */
  private static final class Der {
    private final byte[] bytes;
    private int at;
    private final int end;

    Der(byte[] bytes, int at) {
      this(bytes, at, bytes.length);
    }

    private Der(byte[] bytes, int at, int end) {
      this.bytes = bytes;
      this.at = at;
      this.end = end;
    }

    boolean hasMore() {
      return at < end;
    }

    int tag() {
      return bytes[at] & 0xff;
    }

    /** The length of the element at the cursor, and where its contents start: {length, start}. */
    private int[] header() {
      int length = bytes[at + 1] & 0xff;
      int start = at + 2;
      if (length >= 0x80) {
        int count = length & 0x7f;
        if (count == 0 || count > 3) {
          throw new IllegalArgumentException("unsupported DER length");
        }
        length = 0;
        for (int i = 0; i < count; i++) {
          length = (length << 8) | (bytes[start++] & 0xff);
        }
      }
      if (start + length > end) {
        throw new IllegalArgumentException("a DER element runs past its end");
      }
      return new int[] {length, start};
    }

    private void expect(int tag) {
      if (!hasMore() || tag() != tag) {
        throw new IllegalArgumentException("expected DER tag 0x" + Integer.toHexString(tag));
      }
    }

    /**
     * The contents of the element at the cursor, which must be {@code tag}; the cursor moves past
     * it.
     */
    Der enter(int tag) {
      expect(tag);
      int[] header = header();
      at = header[1] + header[0];
      return new Der(bytes, header[1], header[1] + header[0]);
    }

    void skip(int tag) {
      enter(tag);
    }

    /** The whole element at the cursor, header and contents. */
    byte[] element() {
      int[] header = header();
      return Arrays.copyOfRange(bytes, at, header[1] + header[0]);
    }
  }
}
