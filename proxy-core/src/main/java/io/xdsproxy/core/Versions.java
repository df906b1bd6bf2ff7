package io.xdsproxy.core;

import com.google.protobuf.Any;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** Version strings the proxy derives itself, all functions of content so replicas agree. */
public final class Versions {

  private Versions() {}

  /** The version of a resource body: the first 64 bits of the SHA-256 of its bytes, in hex. */
  public static String ofContent(Any body) {
    MessageDigest digest = sha256();
    digest.update(body.getTypeUrl().getBytes(StandardCharsets.UTF_8));
    digest.update(body.getValue().asReadOnlyByteBuffer());
    return HexFormat.of().formatHex(digest.digest(), 0, 8);
  }

  /**
   * The contribution of one (name, version) pair to a type version. Type versions are the XOR of
   * these over all resources, so a store updates its type version in O(changed resources).
   */
  static long entryHash(String name, String version) {
    long hash = 0xcbf29ce484222325L; // FNV-1a 64
    for (int i = 0; i < name.length(); i++) {
      hash = (hash ^ name.charAt(i)) * 0x100000001b3L;
    }
    hash = (hash ^ 0xffff) * 0x100000001b3L;
    for (int i = 0; i < version.length(); i++) {
      hash = (hash ^ version.charAt(i)) * 0x100000001b3L;
    }
    // A final mix, so that pairs differing in one character do not cancel under XOR.
    hash ^= hash >>> 33;
    hash *= 0xff51afd7ed558ccdL;
    hash ^= hash >>> 33;
    return hash;
  }

  /**
   * The version of a set of resources, made as a type version is made of all of its type's: equal
   * sets have equal versions, on every replica.
   */
  public static String ofResources(Iterable<XdsResource> resources) {
    long hash = 0L;
    for (XdsResource resource : resources) {
      hash ^= entryHash(resource.name(), resource.version());
    }
    return typeVersion(hash);
  }

  static String typeVersion(long xorOfEntries) {
    return HexFormat.of().toHexDigits(xorOfEntries);
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
