package io.xdsproxy.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The state of one type in one node group at one moment. Immutable: the group's store publishes a
 * new snapshot on every change, and streams keep the last one they sent from as their only record
 * of what their client has, so a stream costs a pointer per type rather than a map of names.
 */
public final class TypeSnapshot {

  /** What the proxy knows about a name. */
  public enum NameState {
    PRESENT,
    /** The upstream said it does not exist. */
    ABSENT,
    /** Not heard of yet: the upstream has not answered for it. */
    UNKNOWN
  }

  private final TypeUrl type;

  /** The map itself, which the next snapshot copies: copying through the view wraps every entry. */
  private final Map<String, XdsResource> resources;

  /** {@link #resources}, unmodifiable, as callers see it. */
  private final Map<String, XdsResource> view;

  private final Set<String> absent;
  private final boolean complete;
  private final String version;

  /**
   * The XOR of every resource's entry ({@link Versions#entryHash}), which {@link #version} spells.
   */
  private final long versionHash;

  private final boolean received;
  private final boolean anyUncacheable;
  private final boolean anyAliases;
  private final long changedAt;

  /** Counts the snapshots of the type in its store: each change adds one. */
  private final long sequence;

  /**
   * The names each of the last few changes touched, newest first: element i is what snapshot {@code
   * sequence - i} changed, {@code null} where that is not known by name (the first answer, a change
   * of completeness). Names only, so old snapshots are not kept alive.
   */
  private final List<Set<String>> recentChanges;

  /**
   * What streams derived from this state once for all of them (encoded responses): freed with the
   * snapshot.
   */
  private final Map<Object, Object> memo = new ConcurrentHashMap<>(4);

  /** What {@link #share} keeps, in bytes, roughly. */
  private final java.util.concurrent.atomic.AtomicLong sharedWeight =
      new java.util.concurrent.atomic.AtomicLong();

  /** How much one snapshot shares through {@link #share} at most. */
  public static final long SHARED_WEIGHT_MAX = 4L * 1024 * 1024;

  /**
   * How many changes back a stream can ask what changed; a stream further behind compares
   * everything.
   */
  static final int CHANGES_KEPT = 16;

  /**
   * @param versionHash the XOR of the entries of {@code resources}
   * @param anyUncacheable whether a resource is do_not_cache
   * @param anyAliases whether a resource has aliases
   */
  private TypeSnapshot(
      TypeUrl type,
      Map<String, XdsResource> resources,
      Set<String> absent,
      boolean complete,
      long versionHash,
      boolean received,
      long changedAt,
      long sequence,
      List<Set<String>> recentChanges,
      boolean anyUncacheable,
      boolean anyAliases) {
    this.type = type;
    this.changedAt = changedAt;
    this.sequence = sequence;
    this.recentChanges = recentChanges;
    this.resources = resources;
    this.view = Collections.unmodifiableMap(resources);
    this.absent = absent;
    this.complete = complete;
    this.versionHash = versionHash;
    this.version = Versions.typeVersion(versionHash);
    this.received = received;
    this.anyUncacheable = anyUncacheable;
    this.anyAliases = anyAliases;
  }

  /** A type the upstream has not answered for yet. */
  public static TypeSnapshot empty(TypeUrl type) {
    return new TypeSnapshot(
        type, Map.of(), Set.of(), false, 0L, false, 0, 0, List.of(), false, false);
  }

  public TypeUrl type() {
    return type;
  }

  /** All resources, by name. Unmodifiable. */
  public Map<String, XdsResource> resources() {
    return view;
  }

  public XdsResource get(String name) {
    return resources.get(name);
  }

  /**
   * The resource named {@code nameOrAlias}, or the one that has it among its aliases ("Resource
   * names": a client may subscribe to either). Aliases are rare (VHDS), so they are searched.
   */
  public XdsResource resolve(String nameOrAlias) {
    XdsResource byName = resources.get(nameOrAlias);
    if (byName != null) {
      return byName;
    }
    for (XdsResource resource : resources.values()) {
      if (!resource.aliases().isEmpty() && resource.aliases().contains(nameOrAlias)) {
        return resource;
      }
    }
    return null;
  }

  /**
   * This snapshot if it holds a resource marked do_not_cache, else null: what a stream keeps of the
   * moment it subscribed, for those resources alone. A stream that kept every such snapshot would
   * keep alive one old copy of the type's whole state per moment a client came, under churn tens of
   * kilobytes per stream (the soak found it).
   */
  public TypeSnapshot ifUncacheable() {
    return anyUncacheable ? this : null;
  }

  /** Whether any resource is marked do_not_cache. */
  public boolean holdsUncacheable() {
    return anyUncacheable;
  }

  /** Whether a resource {@code interest} covers is marked do_not_cache. */
  public boolean holdsUncacheable(Interest interest) {
    if (!anyUncacheable) {
      return false;
    }
    for (XdsResource resource : resources.values()) {
      if (resource.doNotCache()
          && (interest.wildcard() || interest.names().contains(resource.name()))) {
        return true;
      }
    }
    return false;
  }

  public NameState state(String name) {
    if (resources.containsKey(name)) {
      return NameState.PRESENT;
    }
    return complete || absent.contains(name) ? NameState.ABSENT : NameState.UNKNOWN;
  }

  /** Whether {@link #resources()} is known to be every resource of the type (a wildcard answer). */
  public boolean isComplete() {
    return complete;
  }

  /** Whether the upstream has answered for this type at least once. */
  public boolean isReceived() {
    return received;
  }

  /**
   * The SotW {@code version_info} for this state: a function of the (name, version) pairs, so it
   * changes whenever any resource does and is the same on every replica fed the same state.
   */
  public String version() {
    return version;
  }

  /**
   * Where this state stands in its store's line of snapshots: each change adds one, so within one
   * store two snapshots with the same sequence hold the same state.
   */
  public long sequence() {
    return sequence;
  }

  /**
   * When the update that made this state reached the proxy (the group's {@link Ticker}), so streams
   * can measure how long it took to reach their clients.
   */
  public long changedAt() {
    return changedAt;
  }

  /**
   * Applies an update that reached the proxy at {@code receivedAt} (the group's {@link Ticker});
   * returns {@code this} when nothing a client could see changed.
   */
  TypeSnapshot apply(ResourceUpdate update, long receivedAt) {
    if (changesNothing(update)) {
      return this;
    }
    Map<String, XdsResource> next =
        update.replaceAll() ? new HashMap<>() : new HashMap<>(resources);
    Set<String> nextAbsent = update.replaceAll() ? new HashSet<>() : new HashSet<>(absent);
    // A partial update keeps a complete store complete; forgetting names makes it incomplete.
    boolean nextComplete =
        update.replaceAll()
            ? update.complete()
            : update.forgotten().isEmpty() && (complete || update.complete());
    // Which names a client could see differently now; unknown by name when completeness changes,
    // since that changes the state of every name not in the store.
    boolean unknownChange = nextComplete != complete || !received;
    Set<String> touched = new HashSet<>();
    // The type version follows each change of the map, so a change costs what it changes.
    long nextHash = update.replaceAll() ? 0L : versionHash;
    // Whether any resource is do_not_cache or has aliases: while none was, only what the update
    // brings can make one so; otherwise every resource is looked at.
    boolean lookAtAll = update.replaceAll() || anyUncacheable || anyAliases;
    boolean nextUncacheable = false;
    boolean nextAliases = false;
    for (XdsResource resource : update.resources()) {
      XdsResource previous = resources.get(resource.name());
      boolean same = keeps(previous, resource);
      XdsResource kept = same ? previous : resource;
      nextHash ^= swapped(next.put(resource.name(), kept), kept);
      nextUncacheable |= kept.doNotCache();
      nextAliases |= !kept.aliases().isEmpty();
      if (!same) {
        touched.add(resource.name());
      }
      nextAbsent.remove(resource.name());
    }
    for (String name : update.heartbeats()) {
      XdsResource current =
          next.containsKey(name)
              ? next.get(name)
              : update.replaceAll() ? resources.get(name) : null;
      if (current != null) {
        XdsResource refreshed = current.refreshed();
        nextHash ^= swapped(next.put(name, refreshed), refreshed);
        nextAbsent.remove(name);
        touched.add(name);
      }
    }
    if (update.replaceAll()) {
      for (String name : resources.keySet()) {
        if (!next.containsKey(name)) {
          touched.add(name);
        }
      }
      touched.addAll(absent);
    }
    for (String name : update.removed()) {
      XdsResource gone = next.remove(name);
      nextHash ^= swapped(gone, null);
      if (gone != null | nextAbsent.add(name)) {
        touched.add(name);
      }
    }
    for (String name : update.forgotten()) {
      XdsResource gone = next.remove(name);
      nextHash ^= swapped(gone, null);
      if (gone != null | nextAbsent.remove(name)) {
        touched.add(name);
      }
    }
    if (!unknownChange && touched.isEmpty()) {
      return this;
    }
    List<Set<String>> changes = new ArrayList<>(Math.min(recentChanges.size() + 1, CHANGES_KEPT));
    changes.add(unknownChange ? null : Collections.unmodifiableSet(touched));
    changes.addAll(recentChanges.subList(0, Math.min(recentChanges.size(), CHANGES_KEPT - 1)));
    return new TypeSnapshot(
        type,
        next,
        Collections.unmodifiableSet(nextAbsent),
        nextComplete,
        nextHash,
        true,
        receivedAt,
        sequence + 1,
        Collections.unmodifiableList(changes),
        lookAtAll ? any(next, XdsResource::doNotCache) : nextUncacheable,
        lookAtAll ? any(next, resource -> !resource.aliases().isEmpty()) : nextAliases);
  }

  private static boolean any(
      Map<String, XdsResource> resources, java.util.function.Predicate<XdsResource> test) {
    return resources.values().stream().anyMatch(test);
  }

  /**
   * Whether {@code previous} is kept when {@code resource} comes for its name: streams compare by
   * reference, so the object clients already have stays when nothing about it changed. A
   * do_not_cache resource is always a new object: each delivery reaches the streams subscribed at
   * that moment, including any that joined since the last one.
   */
  private static boolean keeps(XdsResource previous, XdsResource resource) {
    return resource.sameAs(previous) && !resource.doNotCache();
  }

  /**
   * What putting {@code in} where {@code out} was (either null: an addition, a removal) does to the
   * XOR of the entries: nothing for the same object.
   */
  private static long swapped(XdsResource out, XdsResource in) {
    return out == in ? 0L : entry(out) ^ entry(in);
  }

  private static long entry(XdsResource resource) {
    return resource == null ? 0L : Versions.entryHash(resource.name(), resource.version());
  }

  /**
   * Whether {@code update} would leave this state as it is, told without copying it: every resource
   * it carries is one this state holds, unchanged, and it removes, forgets and refreshes nothing,
   * nor changes whether the state is complete. A SotW control plane resends every resource of a
   * type with each change of anything, to each node group; most of those responses are this.
   */
  private boolean changesNothing(ResourceUpdate update) {
    if (!received
        || !update.heartbeats().isEmpty()
        || !update.removed().isEmpty()
        || !update.forgotten().isEmpty()) {
      return false;
    }
    if (update.replaceAll()
        ? update.complete() != complete
            || !absent.isEmpty()
            || update.resources().size() != resources.size()
        : update.complete() && !complete) {
      return false;
    }
    for (XdsResource resource : update.resources()) {
      if (!keeps(resources.get(resource.name()), resource)) {
        return false;
      }
    }
    return true;
  }

  /**
   * What {@code compute} makes of this state, made once and shared by every stream that asks with
   * an equal {@code key}: the encoded whole state of the type, say, that every wildcard subscriber
   * of the group is sent ("serialize once, write many").
   */
  @SuppressWarnings("unchecked")
  public <T> T memo(Object key, java.util.function.Supplier<T> compute) {
    return (T) memo.computeIfAbsent(key, k -> compute.get());
  }

  /**
   * Like {@link #memo}, for results that many streams may share but any one stream may also be
   * alone to ask for (a response for streams in one position): shared while what this snapshot
   * shares weighs less than {@link #SHARED_WEIGHT_MAX} bytes, by {@code weigh}; past that, made for
   * the caller alone, so that clients in ever more positions cannot grow a snapshot without bound.
   */
  @SuppressWarnings("unchecked")
  public <T> T share(
      Object key,
      java.util.function.Supplier<T> compute,
      java.util.function.ToLongFunction<T> weigh) {
    Object known = memo.get(key);
    if (known != null) {
      return (T) known;
    }
    if (sharedWeight.get() >= SHARED_WEIGHT_MAX) {
      return compute.get();
    }
    return (T)
        memo.computeIfAbsent(
            key,
            k -> {
              T made = compute.get();
              sharedWeight.addAndGet(weigh.applyAsLong(made));
              return made;
            });
  }

  /**
   * The names whose state may differ between {@code earlier}, a snapshot of the same store this one
   * followed, and this one; empty when that is not known by name (too far back, a change of
   * completeness, resources with aliases, whose names clients may not use), and the caller must
   * compare everything. Costs what changed, not what the type holds.
   */
  public Optional<Set<String>> changedSince(TypeSnapshot earlier) {
    if (earlier == this) {
      return Optional.of(Set.of());
    }
    long steps = sequence - earlier.sequence;
    if (anyAliases || earlier.anyAliases || steps <= 0 || steps > recentChanges.size()) {
      return Optional.empty();
    }
    if (steps == 1) {
      return Optional.ofNullable(recentChanges.get(0));
    }
    Set<String> union = new HashSet<>();
    for (int i = 0; i < steps; i++) {
      Set<String> changed = recentChanges.get(i);
      if (changed == null) {
        return Optional.empty();
      }
      union.addAll(changed);
    }
    return Optional.of(union);
  }

  @Override
  public String toString() {
    return type.shortName() + "@" + version() + resources.keySet() + (complete ? " complete" : "");
  }
}
