package io.xdsproxy.core;

import io.xdsproxy.core.NodeGroups.GroupFullException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiConsumer;

/**
 * What a node group's streams want: each watcher's {@link Interest} by type, and per type their
 * union, which is what the group asks its upstream for. The union's names are bounded, so that one
 * member cannot make the group's request larger than a control plane takes in one message: gRPC's
 * default limit on an inbound message, 4 MiB, which istiod, go-control-plane and java-control-plane
 * keep; past it the control plane ends the stream, and the session reconnects with the same request
 * in a loop, every member of the group without updates meanwhile (DESIGN invariant 12). A change
 * that would take a type's union past the bound is refused whole: none of it is applied. Confined
 * to the group's executor.
 */
final class GroupInterest {

  private final NodeGroupKey group;
  private final long maxNameBytes;
  private final Map<TypeUrl, InterestCount> byType = new HashMap<>();

  /**
   * Each watcher's interest by type; immutable maps, a few types each, replaced when one changes.
   */
  private final Map<GroupWatcher, Map<TypeUrl, Interest>> watchers = new HashMap<>();

  /**
   * @param maxNameBytes the most the names of one type's union may take in a request upstream
   *     ({@link InterestCount#bytesOf})
   */
  GroupInterest(NodeGroupKey group, long maxNameBytes) {
    this.group = group;
    this.maxNameBytes = maxNameBytes;
  }

  /**
   * What a watcher's subscription changed.
   *
   * @param before the watcher's interest in the type before, {@link Interest#NONE} if it had none
   * @param union the group's new union for the type, empty when it did not change
   */
  record Change(Interest before, Optional<Interest> union) {}

  /**
   * {@code watcher} now wants {@code wanted} of {@code type} ({@link Interest#NONE} for nothing).
   *
   * @throws GroupFullException when the type's union would take more than the bound in a request
   *     upstream; nothing changed
   */
  Change subscribe(GroupWatcher watcher, TypeUrl type, Interest wanted) throws GroupFullException {
    Map<TypeUrl, Interest> held = watchers.getOrDefault(watcher, Map.of());
    Interest before = held.getOrDefault(type, Interest.NONE);
    InterestCount count = byType.computeIfAbsent(type, t -> new InterestCount());
    Interest unionBefore = count.interest();
    long bytesBefore = count.nameBytes();
    count.remove(before);
    count.add(wanted);
    long bytes = count.nameBytes();
    if (bytes > maxNameBytes && bytes > bytesBefore) {
      count.remove(wanted);
      count.add(before);
      throw new GroupFullException(
          "upstream_names_bytes",
          String.format(
              "node group %s would ask its upstream for %,d bytes of %s names, more than the %,d"
                  + " one group may ask for of one type",
              group, bytes, type.shortName(), maxNameBytes),
          "--max-upstream-names-bytes-per-group");
    }
    Map<TypeUrl, Interest> byTypeOfWatcher = new HashMap<>(held);
    if (wanted.isEmpty()) {
      byTypeOfWatcher.remove(type);
    } else {
      byTypeOfWatcher.put(type, wanted);
    }
    watchers.put(watcher, Map.copyOf(byTypeOfWatcher));
    Interest union = count.interest();
    return new Change(
        before,
        union != unionBefore && !union.equals(unionBefore) ? Optional.of(union) : Optional.empty());
  }

  /**
   * {@code watcher} is gone: its interest leaves the group's. Returns the new unions of the types
   * whose union changed.
   */
  Map<TypeUrl, Interest> leave(GroupWatcher watcher) {
    Map<TypeUrl, Interest> held = watchers.remove(watcher);
    Map<TypeUrl, Interest> changed = new LinkedHashMap<>();
    if (held != null) {
      held.forEach(
          (type, previous) -> {
            InterestCount count = byType.get(type);
            Interest before = count.interest();
            count.remove(previous);
            Interest after = count.interest();
            if (after != before && !after.equals(before)) {
              changed.put(type, after);
            }
          });
    }
    return changed;
  }

  /** Per type the group wants anything of, the union of its streams' interest. */
  Map<TypeUrl, Interest> union() {
    Map<TypeUrl, Interest> wanted = new HashMap<>();
    byType.forEach(
        (type, count) -> {
          if (!count.interest().isEmpty()) {
            wanted.put(type, count.interest());
          }
        });
    return wanted;
  }

  /** Runs {@code action} with each watcher and its interest by type. */
  void forEachWatcher(BiConsumer<GroupWatcher, Map<TypeUrl, Interest>> action) {
    watchers.forEach(action);
  }

  /** Forgets every watcher: the group closed. */
  void clear() {
    watchers.clear();
  }
}
