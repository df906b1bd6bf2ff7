package io.xdsproxy.downstream.xds;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.xdsproxy.core.XdsResource;
import java.util.List;
import java.util.function.Supplier;

/**
 * The encoded bodies of responses, shared by node groups that send the same resources. A body is
 * made once per snapshot and position within a group ({@link TypeState#encoded}); many small groups
 * bound to identities hold the same resources, which are the same objects in each ({@link
 * io.xdsproxy.core.SharedResources}), and each group encoded the same whole state again, one copy
 * of the type's configuration per group for as long as its snapshot lives.
 *
 * <p>A body is found by what it encodes: the encoding's kind (variant and wrapping), its resources
 * and heartbeats by identity, in order, and its removed names. Identity, not a hash of contents,
 * decides: no group can make its key equal another's without holding the very same objects, that
 * is, the same configuration. An entry lives while a snapshot keeps its body.
 */
final class SharedEncodings {

  private static final Cache<Key, byte[]> BODIES =
      Caffeine.newBuilder().weakValues().executor(Runnable::run).build();

  private SharedEncodings() {}

  /**
   * The body {@code encode} makes of these resources, heartbeats and removals in an encoding of
   * {@code kind}, made by this call only if no group holds it.
   */
  static byte[] body(
      Object kind,
      List<XdsResource> included,
      List<XdsResource> heartbeats,
      List<String> removed,
      Supplier<byte[]> encode) {
    return BODIES.get(new Key(kind, included, heartbeats, removed), key -> encode.get());
  }

  /** What a body encodes, compared by the identity of its resources. */
  private static final class Key {
    private final Object kind;
    private final List<XdsResource> included;
    private final List<XdsResource> heartbeats;
    private final List<String> removed;
    private final int hash;

    Key(
        Object kind,
        List<XdsResource> included,
        List<XdsResource> heartbeats,
        List<String> removed) {
      this.kind = kind;
      this.included = included;
      this.heartbeats = heartbeats;
      this.removed = removed;
      this.hash =
          31 * (31 * (31 * kind.hashCode() + identityHash(included)) + identityHash(heartbeats))
              + removed.hashCode();
    }

    private static int identityHash(List<XdsResource> resources) {
      int hash = 1;
      for (XdsResource resource : resources) {
        hash = 31 * hash + System.identityHashCode(resource);
      }
      return hash;
    }

    private static boolean sameObjects(List<XdsResource> one, List<XdsResource> other) {
      if (one.size() != other.size()) {
        return false;
      }
      for (int i = 0; i < one.size(); i++) {
        if (one.get(i) != other.get(i)) {
          return false;
        }
      }
      return true;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Key other
          && hash == other.hash
          && kind.equals(other.kind)
          && sameObjects(included, other.included)
          && sameObjects(heartbeats, other.heartbeats)
          && removed.equals(other.removed);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }
}
