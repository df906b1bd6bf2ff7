package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeSnapshot;
import java.util.Set;

/**
 * Where a type's logical stream stands when nothing of its own shapes its next response: the
 * snapshot its client holds, what it subscribed to, whether it takes TTLs, the flags of the
 * make-before-break round, and the names it is owed whether they changed or not (newly subscribed;
 * the assignments of clusters a Cluster response changed, which every stream of a group that was in
 * sync is owed alike). Streams in the same position owe the same response against the same latest
 * snapshot, so it is built and encoded once for all of them ({@link TypeSnapshot#memo}): after one
 * change, that is every stream of a group that was in sync before it, however many names each
 * subscribed to.
 *
 * <p>The held snapshot is named by its sequence, not held, so that a snapshot's memo does not keep
 * the one before it alive, and that one the one before it. Subscriptions are interned: equal ones
 * are one object, compared here by identity, so a key of thousands of names costs a pointer.
 *
 * @param variant "SotW" or "Delta": their responses differ
 * @param held the {@link TypeSnapshot#sequence} of the snapshot the client holds, {@link
 *     #HOLDS_NOTHING} before its first response of the type
 * @param flags what else the response depends on: defer removals, removals owed
 * @param owed names owed whatever the client holds of them; nearly always none. An immutable copy:
 *     a stream's own set changes as it sends, and a key must not
 */
record ResponsePosition(
    String variant,
    long held,
    Subscription subscription,
    boolean knowsTtl,
    int flags,
    Set<String> owed) {

  /** {@link #held} of a client not sent the type yet; sequences start at 0. */
  static final long HOLDS_NOTHING = -1;

  @Override
  public boolean equals(Object other) {
    return other instanceof ResponsePosition that
        && held == that.held
        && subscription == that.subscription
        && knowsTtl == that.knowsTtl
        && flags == that.flags
        && variant.equals(that.variant)
        && owed.equals(that.owed);
  }

  @Override
  public int hashCode() {
    return ((Long.hashCode(held) * 31 + System.identityHashCode(subscription)) * 31
                + flags * 2
                + (knowsTtl ? 1 : 0))
            * 31
        + owed.size(); // equal sets are equal in size; a set's own hash reads every name
  }

  /** The key of this position's encoded response in the same memo. */
  Object encoding() {
    return new Encoding(this);
  }

  private record Encoding(ResponsePosition position) {}
}
