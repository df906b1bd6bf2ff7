package io.xdsproxy.core;

import java.util.List;
import java.util.Set;

/**
 * What an upstream source tells a node group's store about one type.
 *
 * @param type the type all of this is about
 * @param resources resources added or changed (an unchanged one may be repeated; the store notices)
 * @param removed names the upstream says do not exist (deleted, or never existed): they leave the
 *     store and are remembered as absent, so a client waiting for one can be told
 * @param forgotten names the store should drop without claiming anything about them, because the
 *     upstream is no longer asked for them
 * @param heartbeats names whose TTL the upstream refreshed without resending them ("TTL"); they
 *     stay as they are, and count as present in a {@code replaceAll} update
 * @param replaceAll {@code resources} (and the heartbeats) are the whole set of this type:
 *     everything else leaves the store
 * @param complete after this update the store holds every resource of the type that exists, so a
 *     name it does not hold is absent (a wildcard subscription was answered). A partial update
 *     leaves a complete store complete; one that forgets names makes it incomplete.
 */
public record ResourceUpdate(
    TypeUrl type,
    List<XdsResource> resources,
    Set<String> removed,
    Set<String> forgotten,
    Set<String> heartbeats,
    boolean replaceAll,
    boolean complete) {

  public ResourceUpdate {
    resources = List.copyOf(resources);
    removed = Set.copyOf(removed);
    forgotten = Set.copyOf(forgotten);
    heartbeats = Set.copyOf(heartbeats);
  }

  /** The whole state of a type: what a wildcard SotW response or a filesystem source gives. */
  public static ResourceUpdate complete(TypeUrl type, List<XdsResource> resources) {
    return new ResourceUpdate(type, resources, Set.of(), Set.of(), Set.of(), true, true);
  }

  /** Some resources changed, others were removed; the rest stay as they are. */
  public static ResourceUpdate partial(
      TypeUrl type, List<XdsResource> resources, Set<String> removed, boolean complete) {
    return new ResourceUpdate(type, resources, removed, Set.of(), Set.of(), false, complete);
  }

  /** The store should drop these names: nobody asks for them any more. */
  public static ResourceUpdate forget(TypeUrl type, Set<String> names) {
    return new ResourceUpdate(type, List.of(), Set.of(), names, Set.of(), false, false);
  }

  /** The same update, also refreshing the TTLs of {@code names}. */
  public ResourceUpdate withHeartbeats(Set<String> names) {
    return new ResourceUpdate(type, resources, removed, forgotten, names, replaceAll, complete);
  }
}
