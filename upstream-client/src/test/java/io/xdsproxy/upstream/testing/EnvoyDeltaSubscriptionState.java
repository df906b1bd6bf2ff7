package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.TypeUrl;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The model of {@code DeltaSubscriptionState}
 * (source/extensions/config_subscription/grpc/delta_subscription_state.cc): what Envoy's Delta
 * client knows of one type's subscription. Resources it asked for by name, with the version it
 * holds or "waiting for the server"; resources that came through the wildcard; and "ambiguous" ones
 * it lost interest in while subscribed to the wildcard. From these it builds each request, the
 * first one on a stream with every name and {@code initial_resource_versions}. Confined to the
 * client's main thread.
 */
final class EnvoyDeltaSubscriptionState {

  static final String WILDCARD = "*";

  private final TypeUrl type;
  private final Node node;
  private final EnvoyDeltaMux.WatchMap watchMap;

  /** {@code requested_resource_state_}: a null version is "waiting for the server". */
  private final Map<String, String> requested = new HashMap<>();

  private final Map<String, String> wildcardResources = new HashMap<>();
  private final Map<String, String> ambiguousResources = new HashMap<>();

  /**
   * {@code names_added_}, {@code names_removed_}: a {@code std::set}, so a request lists them
   * sorted.
   */
  private final Set<String> namesAdded = new TreeSet<>();

  private final Set<String> namesRemoved = new TreeSet<>();
  private boolean inInitialLegacyWildcard = true;
  private boolean anyRequestSentYetInCurrentStream;
  private boolean shouldSendInitialResourceVersions = true;

  EnvoyDeltaSubscriptionState(TypeUrl type, Node node, EnvoyDeltaMux.WatchMap watchMap) {
    this.type = type;
    this.node = node;
    this.watchMap = watchMap;
  }

  /** What a NACK or ACK of one response carries ({@code UpdateAck}). */
  record UpdateAck(String nonce, String typeUrl, com.google.rpc.Status errorDetail) {}

  /**
   * {@code updateSubscriptionInterest}: an added name held through the wildcard (or ambiguous)
   * keeps its version, else it waits for the server; a removed name the wildcard may still cover
   * becomes ambiguous. Remove-then-add before a request counts as an add.
   */
  void updateSubscriptionInterest(Set<String> added, Set<String> removed) {
    for (String name : added) {
      if (inInitialLegacyWildcard && !name.equals(WILDCARD)) {
        inInitialLegacyWildcard = false;
      }
      if (wildcardResources.containsKey(name)) {
        requested.put(name, wildcardResources.remove(name));
      } else if (ambiguousResources.containsKey(name)) {
        requested.put(name, ambiguousResources.remove(name));
      } else {
        requested.put(name, null);
      }
      namesRemoved.remove(name);
      namesAdded.add(name);
    }
    for (String name : removed) {
      boolean actuallyErased;
      if (requested.containsKey(WILDCARD)) {
        actuallyErased = requested.containsKey(name);
        String version = requested.remove(name);
        if (actuallyErased && version != null) {
          ambiguousResources.put(name, version);
        }
      } else {
        actuallyErased = requested.containsKey(name);
        requested.remove(name);
      }
      namesAdded.remove(name);
      if (actuallyErased) {
        namesRemoved.add(name);
        inInitialLegacyWildcard = false;
      }
    }
    if (removed.contains(WILDCARD)) {
      wildcardResources.clear();
      ambiguousResources.clear();
    }
  }

  /**
   * {@code subscriptionUpdatePending}: a change of interest, or a fresh stream on which this type
   * has sent nothing yet while it wants something (names, or the legacy wildcard).
   */
  boolean subscriptionUpdatePending() {
    if (!namesAdded.isEmpty() || !namesRemoved.isEmpty()) {
      return true;
    }
    if (!anyRequestSentYetInCurrentStream) {
      return !requested.isEmpty() || inInitialLegacyWildcard;
    }
    return false;
  }

  /** {@code markStreamFresh}. */
  void markStreamFresh(boolean sendInitialResourceVersions) {
    anyRequestSentYetInCurrentStream = false;
    shouldSendInitialResourceVersions = sendInitialResourceVersions;
  }

  /**
   * {@code handleResponse}: the ACK always carries the response's nonce; a response that fails
   * ({@code handleGoodResponse} throws) makes it a NACK with INTERNAL and tells every watch.
   */
  UpdateAck handleResponse(DeltaDiscoveryResponse response) {
    try {
      handleGoodResponse(response);
      return new UpdateAck(response.getNonce(), type.url(), null);
    } catch (EnvoyMux.RejectedUpdate rejected) {
      watchMap.onConfigUpdateFailed(EnvoyMux.FailureReason.UPDATE_REJECTED);
      return new UpdateAck(
          response.getNonce(),
          type.url(),
          com.google.rpc.Status.newBuilder()
              .setCode(io.grpc.Status.Code.INTERNAL.value())
              .setMessage(rejected.getMessage())
              .build());
    }
  }

  /** {@code isHeartbeatResponse}: no body, and the version held already. */
  private boolean isHeartbeat(Resource resource) {
    if (resource.hasResource()) {
      return false;
    }
    if (requested.containsKey(resource.getName())) {
      String held = requested.get(resource.getName());
      return held != null && resource.getVersion().equals(held);
    }
    if (wildcardResources.containsKey(resource.getName())) {
      return resource.getVersion().equals(wildcardResources.get(resource.getName()));
    }
    if (ambiguousResources.containsKey(resource.getName())) {
      return resource.getVersion().equals(ambiguousResources.get(resource.getName()));
    }
    return false;
  }

  /**
   * {@code handleGoodResponse}: a name twice among added, or among added and removed, is rejected;
   * so is a body of another type. Watches get the non-heartbeat resources and the removals; then
   * the versions are recorded (all of them under the wildcard, else only names asked for), and a
   * removed name asked for goes back to "waiting for the server" and stays subscribed
   * (envoy#17980).
   */
  private void handleGoodResponse(DeltaDiscoveryResponse response) {
    Set<String> seen = new HashSet<>();
    for (Resource resource : response.getResourcesList()) {
      if (!seen.add(resource.getName())) {
        throw new EnvoyMux.RejectedUpdate(
            "duplicate name " + resource.getName() + " found among added/updated resources");
      }
      if (isHeartbeat(resource) || (!resource.hasResource() && resource.getAliasesCount() > 0)) {
        continue;
      }
      if (!response.getTypeUrl().equals(resource.getResource().getTypeUrl())) {
        throw new EnvoyMux.RejectedUpdate(
            "type URL "
                + resource.getResource().getTypeUrl()
                + " embedded in an individual Any does not match the message-wide type URL "
                + response.getTypeUrl());
      }
    }
    for (String name : response.getRemovedResourcesList()) {
      if (!seen.add(name)) {
        throw new EnvoyMux.RejectedUpdate(
            "duplicate name " + name + " found in the union of added+removed resources");
      }
    }
    List<Resource> nonHeartbeat = new ArrayList<>();
    for (Resource resource : response.getResourcesList()) {
      if (!isHeartbeat(resource)) {
        nonHeartbeat.add(resource);
      }
    }
    watchMap.onConfigUpdate(
        type, nonHeartbeat, response.getRemovedResourcesList(), response.getSystemVersionInfo());
    for (Resource resource : response.getResourcesList()) {
      if (requested.containsKey(WILDCARD) || requested.containsKey(resource.getName())) {
        addResourceStateFromServer(resource);
      }
    }
    for (String name : response.getRemovedResourcesList()) {
      if (requested.containsKey(name)) {
        requested.put(name, null);
      } else if (ambiguousResources.remove(name) == null) {
        wildcardResources.remove(name);
      }
    }
  }

  private void addResourceStateFromServer(Resource resource) {
    if (requested.containsKey(resource.getName())) {
      requested.put(resource.getName(), resource.getVersion());
    } else {
      wildcardResources.put(resource.getName(), resource.getVersion());
      ambiguousResources.remove(resource.getName());
    }
  }

  /**
   * {@code getNextRequestAckless}. The first request on a stream subscribes every name asked for
   * and lists in {@code initial_resource_versions} each version held (asked for, wildcard,
   * ambiguous; not names still waiting for the server); a pure legacy wildcard goes with an empty
   * subscribe list ({@code isInitialRequestForLegacyWildcard}). The node goes on every Delta
   * request: unlike SotW's {@code GrpcMuxImpl}, this path does not read {@code
   * set_node_on_first_message_only}.
   */
  DeltaDiscoveryRequest getNextRequestAckless() {
    DeltaDiscoveryRequest.Builder request = DeltaDiscoveryRequest.newBuilder();
    if (!anyRequestSentYetInCurrentStream) {
      anyRequestSentYetInCurrentStream = true;
      boolean legacyWildcard = isInitialRequestForLegacyWildcard();
      for (Map.Entry<String, String> entry : requested.entrySet()) {
        if (shouldSendInitialResourceVersions && entry.getValue() != null) {
          request.putInitialResourceVersions(entry.getKey(), entry.getValue());
        }
        namesAdded.add(entry.getKey());
      }
      if (shouldSendInitialResourceVersions) {
        request.putAllInitialResourceVersions(wildcardResources);
        request.putAllInitialResourceVersions(ambiguousResources);
      }
      if (legacyWildcard) {
        namesAdded.clear();
      }
      namesRemoved.clear();
    }
    request.addAllResourceNamesSubscribe(namesAdded);
    request.addAllResourceNamesUnsubscribe(namesRemoved);
    namesAdded.clear();
    namesRemoved.clear();
    return request.setTypeUrl(type.url()).setNode(node).build();
  }

  /**
   * {@code isInitialRequestForLegacyWildcard}: still in the initial legacy wildcard, or asking for
   * nothing but {@code *}.
   */
  private boolean isInitialRequestForLegacyWildcard() {
    if (inInitialLegacyWildcard) {
      requested.put(WILDCARD, null);
      return true;
    }
    if (!namesAdded.isEmpty() || !namesRemoved.isEmpty()) {
      return false;
    }
    return requested.size() == 1 && requested.containsKey(WILDCARD);
  }

  /**
   * {@code getNextRequestWithAck}: the ackless request plus the response's nonce, and error_detail
   * for a NACK.
   */
  DeltaDiscoveryRequest getNextRequestWithAck(UpdateAck ack) {
    DeltaDiscoveryRequest.Builder request =
        getNextRequestAckless().toBuilder().setResponseNonce(ack.nonce());
    if (ack.errorDetail() != null) {
      request.setErrorDetail(ack.errorDetail());
    }
    return request.build();
  }
}
