package io.xdsproxy.core;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What one stream asks for of one type: a wildcard, named resources, or both ("How the client
 * specifies what resources to return"). Immutable; each request yields a new one.
 *
 * @param wildcard subscribed to {@code *}, explicitly or by the legacy rule
 * @param names the names subscribed explicitly, without {@code *}
 * @param explicit whether the client ever named a resource on this stream for this type; once it
 *     has, an empty list means "nothing" rather than the legacy wildcard
 */
public record Subscription(boolean wildcard, Set<String> names, boolean explicit) {

  public static final String WILDCARD = "*";

  /** A type the stream has not asked for yet. */
  public static final Subscription NONE = new Subscription(false, Set.of(), false);

  public Subscription {
    names = Set.copyOf(names);
  }

  /** The subscription after a SotW request with {@code resourceNames}. */
  public Subscription sotw(List<String> resourceNames) {
    if (resourceNames.isEmpty()) {
      return explicit ? new Subscription(false, Set.of(), true) : new Subscription(true, Set.of(), false);
    }
    Set<String> named = new HashSet<>(resourceNames);
    boolean star = named.remove(WILDCARD);
    return new Subscription(star, named, true);
  }

  /** The subscription after a Delta request that subscribes and unsubscribes these names. */
  public Subscription delta(List<String> subscribe, List<String> unsubscribe, boolean firstOfType) {
    if (!firstOfType && subscribe.isEmpty() && unsubscribe.isEmpty()) {
      return this; // an ACK or NACK: nothing changes, and nothing is copied
    }
    boolean legacyWildcard = firstOfType && subscribe.isEmpty() && unsubscribe.isEmpty() && !explicit;
    boolean star = wildcard || legacyWildcard;
    Set<String> named = new HashSet<>(names);
    for (String name : subscribe) {
      if (WILDCARD.equals(name)) {
        star = true;
      } else {
        named.add(name);
      }
    }
    for (String name : unsubscribe) {
      if (WILDCARD.equals(name)) {
        star = false;
      } else {
        named.remove(name);
      }
    }
    return new Subscription(star, named, explicit || !subscribe.isEmpty());
  }

  public boolean covers(String name) {
    return wildcard || names.contains(name);
  }

  public boolean isEmpty() {
    return !wildcard && names.isEmpty();
  }

  /** The upstream interest this subscription adds to its node group. */
  public Interest interest() {
    return new Interest(wildcard, names);
  }
}
