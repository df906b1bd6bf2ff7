package io.xdsproxy.bench.jmh;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource;
import io.xdsproxy.core.XdsResource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An upstream held in memory, so that a benchmark measures the proxy and not a control plane. A
 * group that starts to want a type is sent its whole state, as a control plane answers a new
 * subscription; a change reaches every group that wants its type as one changed resource, as a
 * Delta upstream sends it. Everything happens on the caller's thread.
 */
final class InMemoryUpstream implements UpstreamSource {

  private final Map<TypeUrl, Map<String, XdsResource>> resources = new HashMap<>();
  private final List<Session> sessions = new ArrayList<>();

  /** {@code resource} is added or replaced; the groups that want its type hear of it now. */
  void put(TypeUrl type, XdsResource resource) {
    resources.computeIfAbsent(type, t -> new LinkedHashMap<>()).put(resource.name(), resource);
    ResourceUpdate update = ResourceUpdate.partial(type, List.of(resource), Set.of(), false);
    for (Session session : sessions) {
      if (session.wanted.containsKey(type)) {
        session.listener.onUpdate(update);
      }
    }
  }

  @Override
  public UpstreamSession open(
      NodeGroupKey group, Node node, String tenant, UpstreamListener listener) {
    Session session = new Session(listener);
    sessions.add(session);
    return session;
  }

  @Override
  public String describe() {
    return "resources in memory (JMH benchmark)";
  }

  @Override
  public boolean reached() {
    return true;
  }

  @Override
  public void close() {
    sessions.clear();
  }

  private final class Session implements UpstreamSession {
    private final UpstreamListener listener;
    private final Map<TypeUrl, Interest> wanted = new HashMap<>();

    Session(UpstreamListener listener) {
      this.listener = listener;
    }

    @Override
    public void updateInterest(TypeUrl type, Interest interest) {
      Interest before = interest.isEmpty() ? wanted.remove(type) : wanted.put(type, interest);
      if (before == null && !interest.isEmpty()) {
        sendAll(type);
      }
    }

    @Override
    public void refetch(TypeUrl type) {
      sendAll(type);
    }

    private void sendAll(TypeUrl type) {
      listener.onUpdate(
          ResourceUpdate.complete(
              type, List.copyOf(resources.getOrDefault(type, Map.of()).values())));
    }

    @Override
    public void close() {
      sessions.remove(this);
    }
  }
}
