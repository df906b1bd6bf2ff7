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
 */
final class NameSets {

  private NameSets() {}

  /**
   * {@code names} with {@code name}: the same set, or a new one in place of the shared empty one.
   */
  static Set<String> with(Set<String> names, String name) {
    Set<String> writable = names.isEmpty() ? new LinkedHashSet<>() : names;
    writable.add(name);
    return writable;
  }

  /** {@code names} with every one of {@code more}. */
  static Set<String> withAll(Set<String> names, Collection<String> more) {
    if (more.isEmpty()) {
      return names;
    }
    Set<String> writable = names.isEmpty() ? new LinkedHashSet<>() : names;
    writable.addAll(more);
    return writable;
  }

  /** {@code names} without {@code name}; the shared empty set once none is left. */
  static Set<String> without(Set<String> names, String name) {
    if (names.contains(name)) {
      names.remove(name);
    }
    return names.isEmpty() ? Set.of() : names;
  }

  /**
   * {@code names} keeping only those {@code keep} accepts; the shared empty set once none is left.
   */
  static Set<String> retained(Set<String> names, java.util.function.Predicate<String> keep) {
    if (!names.isEmpty()) {
      names.removeIf(keep.negate());
    }
    return names.isEmpty() ? Set.of() : names;
  }
}
