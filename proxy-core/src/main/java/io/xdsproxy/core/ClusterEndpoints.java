package io.xdsproxy.core;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import java.util.Optional;

/**
 * Which ClusterLoadAssignment a Cluster takes its endpoints from: its {@code
 * eds_cluster_config.service_name}, else its own name, for a cluster of type EDS; none for any
 * other cluster ("Resource warming": a cluster is warm once its assignment arrives). Read once per
 * cluster version, however many streams ask: clusters are held as shared {@link XdsResource}
 * objects, and the answer lives as long as the object does.
 */
public final class ClusterEndpoints {

  private static final Cache<XdsResource, Optional<String>> BY_CLUSTER =
      Caffeine.newBuilder().weakKeys().build();

  private ClusterEndpoints() {}

  /**
   * The name of the assignment {@code cluster} (a resource of {@link TypeUrl#CLUSTER}) warms with,
   * if any.
   */
  public static Optional<String> assignmentOf(XdsResource cluster) {
    return BY_CLUSTER.get(cluster, ClusterEndpoints::read);
  }

  private static Optional<String> read(XdsResource resource) {
    if (!resource.body().is(Cluster.class)) {
      return Optional.empty();
    }
    Cluster cluster;
    try {
      // Parsed, not unpacked: an Any keeps what it unpacks, a second copy of the cluster for as
      // long as any group holds it.
      cluster = Cluster.parseFrom(resource.body().getValue());
    } catch (InvalidProtocolBufferException e) {
      return Optional.empty(); // the store holds only clusters that parsed
    }
    if (cluster.getType() != Cluster.DiscoveryType.EDS) {
      return Optional.empty();
    }
    String serviceName = cluster.getEdsClusterConfig().getServiceName();
    return Optional.of(serviceName.isEmpty() ? cluster.getName() : serviceName);
  }
}
