package io.xdsproxy.core;

import com.github.benmanes.caffeine.cache.Interner;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What one stream asks for of one type: a wildcard, named resources, or both ("How the client
 * specifies what resources to return"). Immutable; a request that changes it yields a new one.
 *
 * <p>Shared: the thousands of clients of a node group mostly subscribe to the same names, so each
 * subscription and each name exists once, however many streams hold it (weakly interned: what no
 * stream holds any more is collected). A stream's subscription costs it a pointer.
 *
 * @param wildcard subscribed to {@code *}, explicitly or by the legacy rule
 * @param names the names subscribed explicitly, without {@code *}
 * @param explicit whether the client ever named a resource on this stream for this type; once it
 *     has, an empty list means "nothing" rather than the legacy wildcard
 */
public record Subscription(boolean wildcard, Set<String> names, boolean explicit) {

  public static final String WILDCARD = "*";

  private static final Interner<String> NAMES = Interner.newWeakInterner();
  private static final Interner<Object> SHARED = Interner.newWeakInterner();

  /** A type the stream has not asked for yet. */
  public static final Subscription NONE = new Subscription(false, Set.of(), false);

  public Subscription {
    names = Set.copyOf(names);
  }

  /** The one instance equal to {@code subscription}, shared by every stream that holds it. */
  private static Subscription shared(boolean wildcard, Set<String> names, boolean explicit) {
    Set<String> interned = new HashSet<>(names.size() * 4 / 3 + 1);
    for (String name : names) {
      interned.add(NAMES.intern(name));
    }
    return (Subscription) SHARED.intern(new Subscription(wildcard, interned, explicit));
  }

  /**
   * {@code names} as a list shared by every stream that sends the same list, e.g. to remember the
   * resource_names of a stream's last request without holding a copy per stream.
   */
  @SuppressWarnings("unchecked")
  public static List<String> sharedList(List<String> names) {
    List<String> interned = new java.util.ArrayList<>(names.size());
    for (String name : names) {
      interned.add(NAMES.intern(name));
    }
    return (List<String>) SHARED.intern(List.copyOf(interned));
  }

  /** The subscription after a SotW request with {@code resourceNames}. */
  public Subscription sotw(List<String> resourceNames) {
    if (resourceNames.isEmpty()) {
      return explicit ? shared(false, Set.of(), true) : shared(true, Set.of(), false);
    }
    Set<String> named = new HashSet<>(resourceNames);
    boolean star = named.remove(WILDCARD);
    return shared(star, named, true);
  }

  /** The subscription after a Delta request that subscribes and unsubscribes these names. */
  public Subscription delta(List<String> subscribe, List<String> unsubscribe, boolean firstOfType) {
    if (!firstOfType && subscribe.isEmpty() && unsubscribe.isEmpty()) {
      return this; // an ACK or NACK: nothing changes, and nothing is copied
    }
    boolean legacyWildcard =
        firstOfType && subscribe.isEmpty() && unsubscribe.isEmpty() && !explicit;
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
    return shared(star, named, explicit || !subscribe.isEmpty());
  }

  public boolean covers(String name) {
    return wildcard || names.contains(name);
  }

  public boolean isEmpty() {
    return !wildcard && names.isEmpty();
  }

  /**
   * The upstream interest this subscription adds to its node group; shared, as subscriptions are,
   * since the group keeps one per stream and type.
   */
  public Interest interest() {
    return (Interest) SHARED.intern(new Interest(wildcard, names));
  }
}
