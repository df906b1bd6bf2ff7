package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.xdsproxy.core.TypeUrl;
import java.util.List;

/** Requests as a client of node {@code node} writes them, for tests that hand them to a call. */
final class ClientRequests {
  private ClientRequests() {}

  /** A SotW request for {@code names} of {@code type}, answering the response {@code nonce}. */
  static DiscoveryRequest sotw(Node node, TypeUrl type, String nonce, String... names) {
    return DiscoveryRequest.newBuilder()
        .setNode(node)
        .setTypeUrl(type.url())
        .setResponseNonce(nonce)
        .addAllResourceNames(List.of(names))
        .build();
  }

  /** A Delta request subscribing to {@code subscribe} of {@code type}, answering {@code nonce}. */
  static DeltaDiscoveryRequest delta(Node node, TypeUrl type, String nonce, String... subscribe) {
    return DeltaDiscoveryRequest.newBuilder()
        .setNode(node)
        .setTypeUrl(type.url())
        .setResponseNonce(nonce)
        .addAllResourceNamesSubscribe(List.of(subscribe))
        .build();
  }
}
