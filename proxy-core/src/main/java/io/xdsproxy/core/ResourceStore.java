package io.xdsproxy.core;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The shared cache of one node group: a {@link TypeSnapshot} per type. Written only on the group's
 * executor; read from any thread, since what it hands out is immutable.
 */
public final class ResourceStore {

  private final Map<TypeUrl, TypeSnapshot> types = new ConcurrentHashMap<>();
  private final Ticker ticker;

  /**
   * @param ticker when an update applied without a time of its own reached the proxy
   */
  public ResourceStore(Ticker ticker) {
    this.ticker = ticker;
  }

  /** The current state of {@code type}; an empty, not-yet-received snapshot if never heard of. */
  public TypeSnapshot snapshot(TypeUrl type) {
    TypeSnapshot snapshot = types.get(type);
    return snapshot != null ? snapshot : TypeSnapshot.empty(type);
  }

  /** Every type the store has heard of. */
  public Map<TypeUrl, TypeSnapshot> snapshots() {
    return Map.copyOf(types);
  }

  /** Applies an update that reached the proxy now. */
  Optional<TypeSnapshot> apply(ResourceUpdate update) {
    return apply(update, ticker.nanos());
  }

  /**
   * Applies an update that reached the proxy at {@code receivedAt} (read from the {@link Ticker});
   * returns the new snapshot, or empty when nothing a client could see changed.
   */
  Optional<TypeSnapshot> apply(ResourceUpdate update, long receivedAt) {
    TypeSnapshot current = snapshot(update.type());
    TypeSnapshot next = current.apply(update, receivedAt);
    if (next == current) {
      return Optional.empty();
    }
    types.put(update.type(), next);
    return Optional.of(next);
  }
}
