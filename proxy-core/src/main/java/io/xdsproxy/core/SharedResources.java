package io.xdsproxy.core;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.google.protobuf.Any;

/**
 * Resources held once, however many node groups hold them. Groups bound to identities are many and
 * small, and most of what their upstream sends each of them is the same: the same Cluster, byte for
 * byte, in every namespace's group. A resource decoded anew is looked up here by its body first, so
 * the second group to receive it neither parses nor hashes it again, and the heap holds one copy of
 * it, its version and whatever is worked out of it once per object ({@link ClusterEndpoints}).
 *
 * <p>Only plain resources are shared: a body with no TTL, no do_not_cache and no aliases, whose
 * name and version follow from its bytes (a SotW resource, or a Delta one whose wrapper says no
 * more than its body). A do_not_cache resource is a new object on every delivery, and a refreshed
 * one differs from the last by identity alone (streams compare by reference), so neither may be
 * found again here. An entry lives as long as a group holds its resource.
 *
 * <p>Isolation: a group holds only what its own upstream sent it; sharing an object with equal
 * bytes shows it nothing it did not receive.
 */
public final class SharedResources {

  /** Plain resources by body; weak values, so an entry goes when no group holds its resource. */
  private static final Cache<Any, XdsResource> PLAIN =
      Caffeine.newBuilder().weakValues().executor(Runnable::run).build();

  /**
   * The encoding of each plain resource a group holds, as a control plane sends it (the {@code
   * Any}'s type URL, then its value), made once per resource object: what {@link ResourceDecoder}
   * compares a resent body's bytes with. By identity, weakly.
   */
  private static final Cache<XdsResource, byte[]> ENCODED =
      Caffeine.newBuilder().weakKeys().executor(Runnable::run).build();

  private SharedResources() {}

  /** The bytes of {@code resource}'s body as a response carries it: not to be changed. */
  static byte[] encoded(XdsResource resource) {
    return ENCODED.get(resource, held -> held.body().toByteArray());
  }

  /**
   * The plain resource with exactly {@code body}, if a group holds one: checked when it was first
   * decoded, as these bytes would be.
   */
  static XdsResource plain(Any body) {
    return PLAIN.getIfPresent(body);
  }

  /**
   * The resource equal to {@code resource} that a group holds already, else {@code resource}, from
   * now on shared; a resource that is not plain is returned as it is.
   */
  public static XdsResource share(XdsResource resource) {
    if (!isPlain(resource)) {
      return resource;
    }
    XdsResource known = PLAIN.asMap().putIfAbsent(resource.body(), resource);
    // Equal bodies: a Delta upstream may still name or version the same bytes otherwise.
    return known != null
            && known.name().equals(resource.name())
            && known.version().equals(resource.version())
        ? known
        : resource;
  }

  /** Whether {@code resource} says nothing beyond its body, name and version. */
  static boolean isPlain(XdsResource resource) {
    return resource.ttl().isEmpty() && !resource.doNotCache() && resource.aliases().isEmpty();
  }
}
