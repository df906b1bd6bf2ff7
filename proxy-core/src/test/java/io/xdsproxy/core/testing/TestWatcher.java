package io.xdsproxy.core.testing;

import io.xdsproxy.core.GroupWatcher;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.TypeSnapshot;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A watcher of a node group that ignores its snapshots and keeps what it is refused. */
public final class TestWatcher implements GroupWatcher {

  /** The subscriptions the group refused, in order. */
  public final List<NodeGroups.GroupFullException> refusals = new CopyOnWriteArrayList<>();

  @Override
  public void onSnapshots(List<TypeSnapshot> snapshots) {}

  @Override
  public void onRefused(NodeGroups.GroupFullException refusal) {
    refusals.add(refusal);
  }
}
