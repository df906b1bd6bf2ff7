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
}
