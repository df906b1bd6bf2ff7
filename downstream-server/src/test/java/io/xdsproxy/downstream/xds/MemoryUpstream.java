package io.xdsproxy.downstream.xds;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource;
import io.xdsproxy.core.XdsResource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A control plane held in memory, answering on the caller's thread: a group that comes to want a
 * type, or wants more of it, is sent the type's whole state, as a SotW control plane answers a
 * request; a change reaches every group that wants its type at once, as a Delta control plane sends
 * it. Its state is what every downstream client should converge to.
 */
final class MemoryUpstream implements UpstreamSource {

  private final Map<TypeUrl, Map<String, XdsResource>> resources = new HashMap<>();
  private final List<Session> sessions = new ArrayList<>();

  /** The resources of {@code type} now, by name. */
  Map<String, XdsResource> state(TypeUrl type) {
    return new TreeMap<>(resources.getOrDefault(type, Map.of()));
  }

  /** {@code name} of {@code type} is added, or replaced by its {@code revision}. */
  void put(TypeUrl type, String name, int revision) {
    XdsResource resource = XdsResource.of(name, body(type, name, revision));
    resources.computeIfAbsent(type, t -> new HashMap<>()).put(name, resource);
    publish(ResourceUpdate.partial(type, List.of(resource), Set.of(), true));
  }

  /** {@code name} of {@code type} is deleted, if it existed. */
  void remove(TypeUrl type, String name) {
    if (resources.getOrDefault(type, new HashMap<>()).remove(name) != null) {
      publish(ResourceUpdate.partial(type, List.of(), Set.of(name), true));
    }
  }

  private void publish(ResourceUpdate update) {
    for (Session session : List.copyOf(sessions)) {
      if (session.wanted.containsKey(update.type())) {
        session.listener.onUpdate(update);
      }
    }
  }

  /** A body of {@code type} named {@code name}: field 1, as every xDS type keeps its name. */
  static Any body(TypeUrl type, String name, int revision) {
    if (type.equals(TypeUrl.CLUSTER)) {
      return Any.pack(
          Cluster.newBuilder()
              .setName(name)
              .setType(Cluster.DiscoveryType.EDS)
              .setAltStatName("revision " + revision)
              .build());
    } else if (type.equals(TypeUrl.LISTENER)) {
      return Any.pack(
          Listener.newBuilder().setName(name).setStatPrefix("revision " + revision).build());
    } else if (type.equals(TypeUrl.ENDPOINT)) {
      return Any.pack(
          ClusterLoadAssignment.newBuilder()
              .setClusterName(name)
              .addEndpoints(LocalityLbEndpoints.newBuilder().setPriority(revision))
              .build());
    } else if (type.equals(TypeUrl.ROUTE)) {
      return Any.pack(
          RouteConfiguration.newBuilder()
              .setName(name)
              .addInternalOnlyHeaders("revision-" + revision)
              .build());
    }
    throw new IllegalArgumentException("no bodies of " + type);
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
    return "resources in memory (fuzz tests)";
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
      if (interest.isEmpty()) {
        wanted.remove(type);
        return;
      }
      wanted.put(type, interest);
      sendAll(type);
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
