package io.xdsproxy.bench;

import com.google.protobuf.Any;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Address;
import io.envoyproxy.envoy.config.core.v3.AggregatedConfigSource;
import io.envoyproxy.envoy.config.core.v3.ConfigSource;
import io.envoyproxy.envoy.config.core.v3.SocketAddress;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.endpoint.v3.Endpoint;
import io.envoyproxy.envoy.config.endpoint.v3.LbEndpoint;
import io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
import java.util.ArrayList;
import java.util.List;

/**
 * The benchmark's configuration, the same in the control plane and in the clients: {@code clusters}
 * EDS clusters, each with endpoints. Round {@code r} changes one resource of cluster 0: its
 * endpoints (moved to port {@code 10000 + r}), or the cluster itself (its connect timeout); a
 * client has converged on round r when it holds that resource.
 */
public final class BenchResources {

  /** Endpoints per cluster: a few, as a service of a mesh has. */
  static final int ENDPOINTS = 3;

  private BenchResources() {}

  public static String clusterName(int index) {
    return "cluster-" + index;
  }

  public static List<String> clusterNames(int clusters) {
    List<String> names = new ArrayList<>(clusters);
    for (int i = 0; i < clusters; i++) {
      names.add(clusterName(i));
    }
    return names;
  }

  /** What a round changes. */
  enum Change {
    ENDPOINTS,
    CLUSTER
  }

  /**
   * Cluster {@code index} in round {@code round}: only cluster 0 changes, and only when clusters
   * change.
   */
  public static Cluster cluster(int index, int round) {
    return Cluster.newBuilder()
        .setName(clusterName(index))
        .setType(Cluster.DiscoveryType.EDS)
        .setConnectTimeout(Durations.fromMillis(1000 + (index == 0 ? round : 0)))
        .setEdsClusterConfig(
            Cluster.EdsClusterConfig.newBuilder()
                .setEdsConfig(
                    ConfigSource.newBuilder().setAds(AggregatedConfigSource.getDefaultInstance())))
        .build();
  }

  public static List<Cluster> clusters(int clusters, int round) {
    List<Cluster> all = new ArrayList<>(clusters);
    for (int i = 0; i < clusters; i++) {
      all.add(cluster(i, round));
    }
    return all;
  }

  /** The endpoints of cluster {@code index} in round {@code round}: only cluster 0 changes. */
  public static ClusterLoadAssignment endpoints(int index, int round) {
    LocalityLbEndpoints.Builder locality = LocalityLbEndpoints.newBuilder();
    for (int e = 0; e < ENDPOINTS; e++) {
      int port = index == 0 ? 10000 + round : 20000 + e;
      locality.addLbEndpoints(
          LbEndpoint.newBuilder()
              .setEndpoint(
                  Endpoint.newBuilder()
                      .setAddress(
                          Address.newBuilder()
                              .setSocketAddress(
                                  SocketAddress.newBuilder()
                                      .setAddress("10.0." + (index / 250) + "." + (index % 250 + e))
                                      .setPortValue(port)))));
    }
    return ClusterLoadAssignment.newBuilder()
        .setClusterName(clusterName(index))
        .addEndpoints(locality)
        .build();
  }

  public static List<ClusterLoadAssignment> allEndpoints(int clusters, int round) {
    List<ClusterLoadAssignment> all = new ArrayList<>(clusters);
    for (int i = 0; i < clusters; i++) {
      all.add(endpoints(i, i == 0 ? round : 0));
    }
    return all;
  }

  /** What a client receives once it has round {@code round}: compared by bytes, not parsed. */
  static Any changed(Change change, int round) {
    return change == Change.CLUSTER ? Any.pack(cluster(0, round)) : Any.pack(endpoints(0, round));
  }
}
