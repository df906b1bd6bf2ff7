package io.xdsproxy.upstream.grpc;

import io.xdsproxy.core.ClusterEndpoints;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/** What every variant of {@link AdsSession} keeps of one type. */
class SubscriptionState {
  final TypeUrl type;

  /** What the group wants. */
  Interest interest = Interest.NONE;

  /**
   * What the current stream asked the upstream for, which it believes the group subscribes to: the
   * interest, and what the protocol could not take back of an earlier one ({@link
   * AdsSession#expressible}).
   */
  Interest wire = Interest.NONE;

  /**
   * do_not_cache resources the group asked the upstream to send again, until a fresh copy comes.
   */
  final Set<String> awaitingFresh = new HashSet<>();

  /** Names the upstream has sent and not deleted since. */
  final Set<String> received = new HashSet<>();

  /**
   * What the upstream last sent of each name received, as decoded: a SotW upstream resends every
   * resource on each change of one, and a body equal to the one held is not decoded again.
   */
  final Map<String, XdsResource> decoded = new HashMap<>();

  /**
   * How many updates have changed {@link #decoded}: a session that compares a response with the one
   * before knows by it whether anything else changed what is held meanwhile.
   */
  long decodedEdits;

  SubscriptionState(TypeUrl type) {
    this.type = type;
  }

  /**
   * Rule 7 of interop.md: what the upstream is asked for of this type, where {@code clusters} is
   * the state of the group's clusters, if any. For assignments, once the upstream has sent the
   * group's clusters, what a directly connected Envoy would ask for: the assignments those clusters
   * take their endpoints from. go-control-plane in ADS mode drops a request that leaves out an
   * assignment it holds ({@code createResponse}, superset rule), and java-control-plane answers
   * none while one asked for is missing ({@code SimpleCache.respond}). A name the group's clients
   * ask for that no cluster references (a cluster a reconnecting Envoy still warms, gone upstream)
   * is not asked for and does not exist, as istiod answers it ({@code
   * buildEmptyClusterLoadAssignment}). Every other type, or before the clusters are known: the
   * group's interest, as it is.
   */
  Interest upstreamInterest(SubscriptionState clusters) {
    if (!type.equals(TypeUrl.ENDPOINT)
        || interest.wildcard()
        || interest.isEmpty()
        || clusters == null
        || clusters.received.isEmpty()) {
      return interest;
    }
    Set<String> names = new HashSet<>();
    for (XdsResource cluster : clusters.decoded.values()) {
      ClusterEndpoints.assignmentOf(cluster).ifPresent(names::add);
    }
    return new Interest(false, names);
  }
}
