package io.xdsproxy.core;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Interner;
import com.google.protobuf.Internal;
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
 * <p>Found by identity where it can be: the newcomers of a group send byte-identical lists of
 * names, which the server's request marshaller decodes once into one list for all of them; what was
 * made of such a list is remembered for as long as the list lives, so the second and later
 * newcomers pay a lookup rather than sets of thousands of names and elementwise comparisons.
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

  /**
   * What was made of a list of names that never changes, by the list's identity (weak keys compare
   * by identity): its subscription after a SotW request, and its shared copy. An entry lives as
   * long as its list, and a value never holds its key.
   */
  private static final Cache<List<String>, Subscription> SOTW_BY_LIST =
      Caffeine.newBuilder().weakKeys().build();

  private static final Cache<List<String>, List<String>> SHARED_BY_LIST =
      Caffeine.newBuilder().weakKeys().build();

  /** Each subscription's interest, by the subscription's identity: subscriptions are interned. */
  private static final Cache<Subscription, Interest> INTERESTS =
      Caffeine.newBuilder().weakKeys().build();

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
  public static List<String> sharedList(List<String> names) {
    if (!unchanging(names)) {
      return internedList(names);
    }
    List<String> known = SHARED_BY_LIST.getIfPresent(names);
    if (known == null) {
      known = internedList(names);
      if (known != names) {
        SHARED_BY_LIST.put(names, known);
      }
    }
    return known;
  }

  @SuppressWarnings("unchecked")
  private static List<String> internedList(List<String> names) {
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
    // The rest depends on the list alone.
    if (!unchanging(resourceNames)) {
      return named(resourceNames);
    }
    Subscription known = SOTW_BY_LIST.getIfPresent(resourceNames);
    if (known == null) {
      known = named(resourceNames);
      SOTW_BY_LIST.put(resourceNames, known);
    }
    return known;
  }

  /**
   * Whether {@code names} can be remembered by identity: a list that never changes, as a parsed
   * request's does not.
   */
  private static boolean unchanging(List<String> names) {
    return names instanceof Internal.ProtobufList<?> list && !list.isModifiable();
  }

  /** The subscription to {@code resourceNames}, {@code *} among them or not. */
  private static Subscription named(List<String> resourceNames) {
    Set<String> named = new HashSet<>(resourceNames);
    boolean star = named.remove(WILDCARD);
    return shared(star, named, true);
  }

  /** The subscription after a Delta request that subscribes and unsubscribes these names. */
  public Subscription delta(List<String> subscribe, List<String> unsubscribe, boolean firstOfType) {
    if (!firstOfType && subscribe.isEmpty() && unsubscribe.isEmpty()) {
      return this; // an ACK or NACK: nothing changes, and nothing is copied
    }
    if (!wildcard && names.isEmpty() && !subscribe.isEmpty() && unsubscribe.isEmpty()) {
      // Nothing but the names subscribed (a newcomer's first request): what a SotW request with the
      // same list subscribes to, found by the list's identity where it is shared.
      return sotw(subscribe);
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
    if (names.isEmpty()) {
      return wildcard ? Interest.WILDCARD : Interest.NONE;
    }
    return INTERESTS.get(this, s -> (Interest) SHARED.intern(new Interest(s.wildcard, s.names)));
  }
}
