package io.xdsproxy.downstream.xds;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * Sets of resource names a stream keeps for the moments it owes something of its own (names just
 * subscribed to, names it must send whatever the client holds, removals owed): empty nearly always,
 * and then the one shared empty set, so that ten thousand idle streams hold no set of their own; a
 * set is made when a name comes, and dropped when the last one goes (a hash table never shrinks,
 * and would keep the table of thousands of names for as long as the stream lives).
 *
 * <p>A set may also be read-only and shared: a newcomer is owed every name it subscribed to, and
 * holds its subscription's own set as what it is owed, rather than a copy (so that newcomers that
 * subscribe alike are in one {@link ResponsePosition}, compared by identity). Only the sets made
 * here are written to; any other is copied first, when it must change.
 */
final class NameSets {

  private NameSets() {}

  /**
   * {@code names} with {@code name}: the same set, or a new one in place of the shared empty one.
   */
  static Set<String> with(Set<String> names, String name) {
    if (names.contains(name)) {
      return names;
    }
    Set<String> writable = writable(names);
    writable.add(name);
    return writable;
  }

  /** {@code names} itself if it is one made here, else a copy that can be written to. */
  private static Set<String> writable(Set<String> names) {
    return names instanceof LinkedHashSet<String> made ? made : new LinkedHashSet<>(names);
  }

  /** {@code names} with every one of {@code more}. */
  static Set<String> withAll(Set<String> names, Collection<String> more) {
    if (more.isEmpty()) {
      return names;
    }
    if (names.containsAll(more)) {
      return names;
    }
    Set<String> writable = writable(names);
    writable.addAll(more);
    return writable;
  }

  /** {@code names} without {@code name}; the shared empty set once none is left. */
  static Set<String> without(Set<String> names, String name) {
    if (!names.contains(name)) {
      return names;
    }
    Set<String> writable = writable(names);
    writable.remove(name);
    return writable.isEmpty() ? Set.of() : writable;
  }

  /**
   * {@code names} keeping only those {@code keep} accepts; the shared empty set once none is left.
   */
  static Set<String> retained(Set<String> names, java.util.function.Predicate<String> keep) {
    if (names instanceof LinkedHashSet<String> made) {
      made.removeIf(keep.negate());
      return made.isEmpty() ? Set.of() : made;
    }
    int kept = 0;
    for (String name : names) {
      kept += keep.test(name) ? 1 : 0;
    }
    if (kept == names.size()) {
      return names;
    }
    if (kept == 0) {
      return Set.of();
    }
    Set<String> writable = new LinkedHashSet<>(names);
    writable.removeIf(keep.negate());
    return writable;
  }
}
