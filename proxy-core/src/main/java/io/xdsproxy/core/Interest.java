package io.xdsproxy.core;

import java.util.Set;

/**
 * What a node group asks its upstream for, for one type: the union of its streams' subscriptions.
 *
 * @param wildcard some stream subscribed to {@code *}
 * @param names the names some stream subscribed to explicitly
 */
public record Interest(boolean wildcard, Set<String> names) {

  public static final Interest NONE = new Interest(false, Set.of());

  /** The wildcard and no name. */
  public static final Interest WILDCARD = new Interest(true, Set.of());

  public Interest {
    names = Set.copyOf(names);
  }

  public boolean isEmpty() {
    return !wildcard && names.isEmpty();
  }

  /** What this interest asks for that {@code other} does not. */
  public Interest beyond(Interest other) {
    if (other == this) {
      return NONE;
    }
    if (other.names.isEmpty()) {
      return other.wildcard ? new Interest(false, names) : this; // a newcomer's: everything
    }
    java.util.Set<String> more = new java.util.HashSet<>(names);
    more.removeAll(other.names);
    return new Interest(wildcard && !other.wildcard, more);
  }
}
