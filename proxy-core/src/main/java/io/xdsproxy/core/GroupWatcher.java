package io.xdsproxy.core;

import java.util.List;

/** A downstream stream, as its node group sees it: something to tell about new snapshots. */
public interface GroupWatcher {

  /**
   * {@code snapshots} are the new states of types this watcher subscribed to, changed together by
   * one upstream update (so a stream can order them make-before-break). Called on the group's
   * executor: an implementation hands them to its own executor and returns.
   */
  void onSnapshots(List<TypeSnapshot> snapshots);

  /**
   * The group refused a subscription of this watcher: it would have taken the group past {@code
   * refusal}'s limit (what the group asks its upstream for). None of it was applied; the watcher's
   * earlier interest stands until it leaves. Called on the group's executor: an implementation
   * hands it to its own executor, where it ends itself, and returns.
   */
  void onRefused(NodeGroups.GroupFullException refusal);
}
