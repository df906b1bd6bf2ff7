package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.TypeUrl;
import java.util.List;
import java.util.Map;

/**
 * What the fuzz tests of downstream streams pick from: type URLs good and bad, resource names
 * stored, absent, the wildcard and too long, nodes of one group, of another, and of none, and
 * limits small enough that the fuzzer runs into them.
 */
final class FuzzedXds {

  private FuzzedXds() {}

  /** Small limits, so that the fuzzer runs into them. */
  static final Limits LIMITS =
      new Limits(
          64 * 1024, 6, 16, 100, 3, 0, 0, 1000, 1000, 64 * 1024, 256 * 1024, 64 * 1024, 16, 1024);

  static final List<TypeUrl> STORED =
      List.of(TypeUrl.CLUSTER, TypeUrl.LISTENER, TypeUrl.ENDPOINT, TypeUrl.ROUTE);
  static final List<String> TYPE_URLS =
      List.of(
          TypeUrl.CLUSTER.url(),
          TypeUrl.LISTENER.url(),
          TypeUrl.ENDPOINT.url(),
          TypeUrl.ROUTE.url(),
          "type.googleapis.com/fuzz.v1.Opaque",
          "",
          "envoy.config.cluster.v3.Cluster",
          "type.googleapis.com/",
          "type.googleapis.com/envoy.config.cluster.v3.Cluster ");
  static final Map<TypeUrl, List<String>> STORED_NAMES =
      Map.of(
          TypeUrl.CLUSTER,
          List.of("c0", "c1", "c2"),
          TypeUrl.LISTENER,
          List.of("l0", "l1"),
          TypeUrl.ENDPOINT,
          List.of("e0", "e1", "e2"),
          TypeUrl.ROUTE,
          List.of("r0", "r1"));
  static final List<String> NAMES =
      List.of(
          "c0",
          "c1",
          "c2",
          "l0",
          "l1",
          "e0",
          "e1",
          "e2",
          "r0",
          "r1",
          "*",
          "",
          "a-name-longer-than-allowed");
  static final Node OBSERVER = Node.newBuilder().setId("observer").setCluster("g").build();
  static final List<Node> NODES =
      List.of(
          Node.newBuilder().setId("a").setCluster("g").build(),
          Node.newBuilder().setId("b").setCluster("g").build(),
          Node.newBuilder().setId("c").setCluster("h").build(),
          Node.newBuilder().setId("ungroupable").build(),
          Node.newBuilder()
              .setId("a")
              .setCluster("g")
              .addClientFeatures("envoy.lb.does_not_support_overprovisioning")
              .build());

  /** The type of {@code url}, or null for a URL the proxy refuses. */
  static TypeUrl typeOf(String url) {
    try {
      return TypeUrl.parse(url);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** The upstream's state when a fuzz input begins. */
  static void seed(MemoryUpstream upstream) {
    upstream.put(TypeUrl.CLUSTER, "c0", 0);
    upstream.put(TypeUrl.CLUSTER, "c1", 0);
    upstream.put(TypeUrl.LISTENER, "l0", 0);
    upstream.put(TypeUrl.ENDPOINT, "e0", 0);
    upstream.put(TypeUrl.ENDPOINT, "e1", 0);
    upstream.put(TypeUrl.ROUTE, "r0", 0);
  }
}
