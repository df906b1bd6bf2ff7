package io.xdsproxy.core;

/** A downstream stream, as its node group sees it: something to tell about new snapshots. */
public interface GroupWatcher {

  /**
   * {@code snapshot} is the new state of a type this watcher subscribed to. Called on the group's
   * executor: an implementation hands the snapshot to its own executor and returns.
   */
  void onSnapshot(TypeSnapshot snapshot);
}
