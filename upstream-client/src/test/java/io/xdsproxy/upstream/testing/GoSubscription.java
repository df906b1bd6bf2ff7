package io.xdsproxy.upstream.testing;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * go-control-plane HEAD's server-side view of one type on one stream: {@code stream.Subscription}
 * (pkg/server/stream/v3/subscription.go). Owned by its stream; a cache only ever sees a {@link
 * View}, as go hands the cache a copy of the struct with the watch.
 */
final class GoSubscription {

  private static final String EXPLICIT_WILDCARD = "*";
  private static final String GLOB_SUFFIX = "/*";

  private boolean wildcard;

  /**
   * True until the stream sends a name (or "*") for the type: only then is an empty list a
   * wildcard.
   */
  private boolean allowLegacyWildcard;

  private Set<String> subscribed = new HashSet<>();
  private Set<String> prefixes = new HashSet<>();

  /**
   * What the client was sent and at which version (SotW: the response's version; Delta: the
   * resource's hash), set by the server when it sends a response, not when the client ACKs it.
   */
  private Map<String, String> returned;

  /**
   * {@code newSubscription}: wildcard only when the first request names nothing and legacy wildcard
   * is allowed.
   */
  private GoSubscription(
      boolean emptyRequest, boolean allowLegacyWildcard, Map<String, String> initialVersions) {
    this.wildcard = emptyRequest && allowLegacyWildcard;
    this.allowLegacyWildcard = allowLegacyWildcard;
    this.returned = new HashMap<>(initialVersions);
  }

  /** {@code NewSotwSubscription}: the first SotW request of the type on the stream. */
  static GoSubscription sotw(List<String> names, boolean allowLegacyWildcard) {
    GoSubscription subscription =
        new GoSubscription(names.isEmpty(), allowLegacyWildcard, Map.of());
    subscription.setResourceSubscription(names);
    return subscription;
  }

  /**
   * {@code NewDeltaSubscription}: the first Delta request of the type; its {@code
   * initial_resource_versions} become what the client was returned.
   */
  static GoSubscription delta(
      List<String> subscribe,
      List<String> unsubscribe,
      Map<String, String> initialVersions,
      boolean allowLegacyWildcard) {
    GoSubscription subscription =
        new GoSubscription(subscribe.isEmpty(), allowLegacyWildcard, initialVersions);
    subscription.updateResourceSubscriptions(subscribe, unsubscribe);
    return subscription;
  }

  /**
   * {@code SetResourceSubscription}: a SotW request's names are the whole subscription. Once a name
   * was sent an empty list subscribes to nothing; names no longer subscribed leave {@code
   * returned}, "so later subscriptions will trigger responses, even if the version has not changed"
   * (unless "*" is sent).
   */
  void setResourceSubscription(List<String> names) {
    if (allowLegacyWildcard) {
      if (names.isEmpty()) {
        return;
      }
      allowLegacyWildcard = false;
    }
    Set<String> newNames = new HashSet<>();
    Set<String> newPrefixes = new HashSet<>();
    boolean explicitWildcard = false;
    for (String name : names) {
      if (name.equals(EXPLICIT_WILDCARD)) {
        explicitWildcard = true;
      } else if (name.endsWith(GLOB_SUFFIX)) {
        newPrefixes.add(name.substring(0, name.length() - 1));
      } else {
        newNames.add(name);
      }
    }
    if (!explicitWildcard) {
      returned
          .keySet()
          .removeIf(name -> !newNames.contains(name) && !matchesAnyPrefix(newPrefixes, name));
    }
    wildcard = explicitWildcard;
    subscribed = newNames;
    prefixes = newPrefixes;
  }

  /**
   * {@code UpdateResourceSubscriptions}: subscriptions first, then unsubscriptions, so a name in
   * both ends unsubscribed. While legacy wildcard, a request subscribing nothing changes nothing
   * (its unsubscriptions included); the first name ends legacy mode but keeps the wildcard.
   * Unsubscribing a named resource while wildcard marks it returned at version "", so the next
   * answer either sends it again or reports it removed (the protocol requires one of the two);
   * otherwise it leaves {@code returned}.
   */
  void updateResourceSubscriptions(List<String> subscribe, List<String> unsubscribe) {
    if (allowLegacyWildcard) {
      if (subscribe.isEmpty()) {
        return;
      }
      allowLegacyWildcard = false;
    }
    for (String name : subscribe) {
      if (name.equals(EXPLICIT_WILDCARD)) {
        wildcard = true;
      } else if (name.endsWith(GLOB_SUFFIX)) {
        prefixes.add(name.substring(0, name.length() - 1));
      } else {
        subscribed.add(name);
      }
    }
    for (String name : unsubscribe) {
      if (name.equals(EXPLICIT_WILDCARD)) {
        wildcard = false;
        continue;
      }
      if (name.endsWith(GLOB_SUFFIX)) {
        prefixes.remove(name.substring(0, name.length() - 1));
        continue;
      }
      if (subscribed.contains(name) && wildcard) {
        returned.put(name, "");
      } else {
        returned.remove(name);
      }
      subscribed.remove(name);
    }
  }

  /** {@code SetReturnedResources}: what the response being sent leaves the client with. */
  void setReturnedResources(Map<String, String> versions) {
    returned = new HashMap<>(versions);
  }

  boolean isWildcard() {
    return wildcard;
  }

  /** The state a cache computes a watch's answer from, fixed when the watch is created. */
  View view() {
    return new View(wildcard, Set.copyOf(subscribed), Set.copyOf(prefixes), Map.copyOf(returned));
  }

  private static boolean matchesAnyPrefix(Set<String> prefixes, String name) {
    return prefixes.stream().anyMatch(name::startsWith);
  }

  /** The cache's side of {@code cache.Subscription} (pkg/cache/v3/cache.go). */
  record View(
      boolean wildcard,
      Set<String> subscribed,
      Set<String> prefixes,
      Map<String, String> returned) {

    /** {@code isSubscribedTo} (linear.go): by name or by a prefix glob. */
    boolean isSubscribedTo(String name) {
      return subscribed.contains(name) || matchesAnyPrefix(prefixes, name);
    }
  }
}
