package io.xdsproxy.core.testing;

import io.envoyproxy.envoy.config.core.v3.Address;
import io.envoyproxy.envoy.config.core.v3.SocketAddress;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.endpoint.v3.Endpoint;
import io.envoyproxy.envoy.config.endpoint.v3.LbEndpoint;
import io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;

/** ClusterLoadAssignments for tests: one endpoint on loopback. */
public final class Assignments {

  private Assignments() {}

  /** The assignment {@code name} with one endpoint, 127.0.0.1 at {@code port}. */
  public static ClusterLoadAssignment oneEndpoint(String name, int port) {
    return ClusterLoadAssignment.newBuilder()
        .setClusterName(name)
        .addEndpoints(
            LocalityLbEndpoints.newBuilder()
                .addLbEndpoints(
                    LbEndpoint.newBuilder()
                        .setEndpoint(
                            Endpoint.newBuilder()
                                .setAddress(
                                    Address.newBuilder()
                                        .setSocketAddress(
                                            SocketAddress.newBuilder()
                                                .setAddress("127.0.0.1")
                                                .setPortValue(port))))))
        .build();
  }
}
