package io.xdsproxy.upstream.testing;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * go-control-plane v0.13.4's view of one Delta type on one stream: {@code stream.StreamState}
 * (pkg/server/stream/v3/stream.go at v0.13.4) with the server's {@code subscribe} and {@code
 * unsubscribe} (pkg/server/delta/v3/server.go). Unlike HEAD's subscription, wildcard is decided
 * once — the first request subscribes nothing — and only "*" changes it; unsubscribing a name
 * outside wildcard leaves its version known, so subscribing it again with an unchanged resource
 * sends nothing.
 */
final class GoStreamStateV013 {

  private boolean wildcard;
  private final Set<String> subscribed = new HashSet<>();

  /**
   * What the client was sent, by name: content hashes ({@code resourceVersions}), or "" to force an
   * answer.
   */
  private Map<String, String> resourceVersions;

  /** No response was sent yet for the type ({@code first}). */
  private boolean first = true;

  /** {@code NewStreamState(len(subscribe) == 0, initial_resource_versions)}. */
  GoStreamStateV013(boolean wildcard, Map<String, String> initialVersions) {
    this.wildcard = wildcard;
    this.resourceVersions = new HashMap<>(initialVersions);
  }

  /** {@code server.subscribe}: "*" turns wildcard on, a name is added. */
  void subscribe(List<String> names) {
    for (String name : names) {
      if (name.equals("*")) {
        wildcard = true;
      } else {
        subscribed.add(name);
      }
    }
  }

  /**
   * {@code server.unsubscribe}: "*" turns wildcard off; a subscribed name unsubscribed while
   * wildcard is marked sent at "" so that the next answer sends it again or reports it removed.
   */
  void unsubscribe(List<String> names) {
    for (String name : names) {
      if (name.equals("*")) {
        wildcard = false;
        continue;
      }
      if (subscribed.contains(name) && wildcard) {
        resourceVersions.put(name, "");
      }
      subscribed.remove(name);
    }
  }

  /** {@code SetResourceVersions}: called as a response is sent; the state is no longer first. */
  void setResourceVersions(Map<String, String> versions) {
    first = false;
    resourceVersions = new HashMap<>(versions);
  }

  View view() {
    return new View(wildcard, Set.copyOf(subscribed), Map.copyOf(resourceVersions), first);
  }

  /** The copy of the state the cache keeps with a watch (go passes the struct by value). */
  record View(
      boolean wildcard,
      Set<String> subscribed,
      Map<String, String> resourceVersions,
      boolean first) {}
}
