package io.xdsproxy.core;

import com.google.protobuf.CodedOutputStream;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * How many streams of a node group want each name of one type, so the union is updated in O(change)
 * as streams come and go, and rebuilt only when a name or the wildcard gains its first stream or
 * loses its last. Streams that subscribe alike hold one interned {@link Interest}, so streams are
 * counted per interest instance, and names per instance that wants them: a newcomer whose interest
 * some stream holds already costs a count, not one per name of what can be thousands. It also keeps
 * what the union's names weigh in a request upstream ({@link #nameBytes}), for the group's bound on
 * it. Confined to the group's executor.
 */
final class InterestCount {

  /**
   * The field number of the names in a request upstream: {@code resource_names} of a
   * DiscoveryRequest and {@code resource_names_subscribe} of a DeltaDiscoveryRequest are both 3.
   */
  private static final int NAMES_FIELD = 3;

  private final Map<Interest, Integer> holders = new IdentityHashMap<>();
  private int wildcards;
  private final Map<String, Integer> names = new HashMap<>();
  private long nameBytes;
  private Interest cached = Interest.NONE;

  /**
   * The bytes {@code name} takes in a request upstream: its UTF-8 bytes and its field's tag and
   * length, so that many short names weigh what they cost, not only their characters.
   */
  static int bytesOf(String name) {
    return CodedOutputStream.computeStringSize(NAMES_FIELD, name);
  }

  void add(Interest interest) {
    if (interest.isEmpty() || holders.merge(interest, 1, Integer::sum) > 1) {
      return;
    }
    if (interest.wildcard() && wildcards++ == 0) {
      cached = null;
    }
    for (String name : interest.names()) {
      if (names.merge(name, 1, Integer::sum) == 1) {
        nameBytes += bytesOf(name);
        cached = null;
      }
    }
  }

  /** Takes away {@code interest}, the same instance {@link #add} was given. */
  void remove(Interest interest) {
    if (interest.isEmpty()
        || holders.computeIfPresent(interest, (i, c) -> c == 1 ? null : c - 1) != null) {
      return;
    }
    if (interest.wildcard() && --wildcards == 0) {
      cached = null;
    }
    for (String name : interest.names()) {
      if (names.computeIfPresent(name, (n, c) -> c == 1 ? null : c - 1) == null) {
        nameBytes -= bytesOf(name);
        cached = null;
      }
    }
  }

  /** The union of the interests added and not removed. */
  Interest interest() {
    if (cached == null) {
      cached = new Interest(wildcards > 0, names.keySet());
    }
    return cached;
  }

  /** What the names of {@link #interest()} take in a request upstream ({@link #bytesOf}). */
  long nameBytes() {
    return nameBytes;
  }
}
