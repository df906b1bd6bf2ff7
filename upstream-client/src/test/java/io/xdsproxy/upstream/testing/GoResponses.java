package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import java.util.List;
import java.util.Map;

/**
 * What go-control-plane's caches hand their server: {@code RawResponse} and {@code
 * RawDeltaResponse} (pkg/cache/v3/cache.go).
 */
final class GoResponses {

  private GoResponses() {}

  /**
   * {@code RawResponse}: the request of the watch it answers, the version the client will ACK, the
   * resources, and what the subscription will have been sent once it is ({@code returnedResources},
   * which the SotW server stores in the subscription when it sends the response).
   */
  record Sotw(
      DiscoveryRequest request,
      String version,
      List<GoResource> resources,
      Map<String, String> returnedResources) {

    String typeUrl() {
      return request.getTypeUrl();
    }

    /** {@code GetDiscoveryResponse}: the nonce is the server's, set as it sends. */
    DiscoveryResponse toProto(String nonce) {
      DiscoveryResponse.Builder response =
          DiscoveryResponse.newBuilder()
              .setVersionInfo(version)
              .setTypeUrl(typeUrl())
              .setNonce(nonce);
      resources.forEach(resource -> response.addResources(resource.sotwAny(typeUrl())));
      return response.build();
    }
  }

  /**
   * {@code RawDeltaResponse}: the resources to send, the names to report removed, the per-resource
   * versions the client will know once it is sent ({@code returnedResources}; v0.13.4 calls it
   * {@code NextVersionMap}), and a system version for debugging only.
   */
  record Delta(
      DeltaDiscoveryRequest request,
      String systemVersion,
      List<GoResource> resources,
      List<String> removed,
      Map<String, String> returnedResources) {

    String typeUrl() {
      return request.getTypeUrl();
    }

    /** {@code GetDeltaDiscoveryResponse}. */
    DeltaDiscoveryResponse toProto(String nonce) {
      DeltaDiscoveryResponse.Builder response =
          DeltaDiscoveryResponse.newBuilder()
              .setTypeUrl(typeUrl())
              .setSystemVersionInfo(systemVersion)
              .addAllRemovedResources(removed)
              .setNonce(nonce);
      resources.forEach(resource -> response.addResources(resource.deltaResource(typeUrl())));
      return response.build();
    }
  }
}
