package io.xdsproxy.core.testing;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An upstream whose updates the test sends, to one group or to every group open: no network, no
 * rules of its own, and sessions that ignore what groups ask of them. For tests of what groups do
 * with what an upstream tells them.
 */
public class ScriptedUpstream implements UpstreamSource {

  private final Map<NodeGroupKey, UpstreamListener> listeners = new ConcurrentHashMap<>();
  private final boolean reached;

  /**
   * @param reached what {@link #reached()} says: whether readiness counts it as reached
   */
  public ScriptedUpstream(boolean reached) {
    this.reached = reached;
  }

  /** Sends {@code update} to every group open. */
  public void send(ResourceUpdate update) {
    listeners.values().forEach(listener -> listener.onUpdate(update));
  }

  /** Sends {@code update} to {@code group}, which must be open. */
  public void send(NodeGroupKey group, ResourceUpdate update) {
    listeners.get(group).onUpdate(update);
  }

  /** Forgets the groups opened so far: later updates reach only groups opened after. */
  public void forgetGroups() {
    listeners.clear();
  }

  @Override
  public UpstreamSession open(
      NodeGroupKey group, Node node, String tenant, UpstreamListener listener) {
    listeners.put(group, listener);
    return new UpstreamSession() {
      @Override
      public void updateInterest(TypeUrl type, Interest interest) {}

      @Override
      public void refetch(TypeUrl type) {}

      @Override
      public void close() {}
    };
  }

  @Override
  public String describe() {
    return "an upstream the test scripts";
  }

  @Override
  public boolean reached() {
    return reached;
  }

  @Override
  public void close() {}
}
