package io.xdsproxy.upstream.testing;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.TypeUrl;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * What {@link EnvoyLikeClient}'s subscribers see of its ADS mux, the model's {@code
 * Config::GrpcMux} (envoy/config/grpc_mux.h): watches per type, pausing a type, and a stream to
 * send on. Two implementations: {@link EnvoySotwMux} ({@code GrpcMuxImpl}) and {@link
 * EnvoyDeltaMux} ({@code NewGrpcMuxImpl}). Everything here runs on the client's main thread.
 */
interface EnvoyMux {

  /** A subscriber's interest in some names of one type; empty names are the (legacy) wildcard. */
  interface Watch {
    /**
     * The subscriber is gone: {@code ~GrpcMuxWatchImpl} (SotW) or {@code
     * NewGrpcMuxImpl::removeWatch} (Delta).
     */
    void remove();
  }

  /**
   * Releases one pause of the types it was taken for ({@code ScopedResume}); a second call does
   * nothing.
   */
  interface Resume extends Runnable {}

  /** {@code GrpcMux::addWatch}: subscribes {@code names} of {@code type} for {@code callbacks}. */
  Watch addWatch(TypeUrl type, Set<String> names, SubscriptionCallbacks callbacks);

  /** {@code GrpcMux::pause}: requests of these types are held until every pause is released. */
  Resume pause(TypeUrl... types);

  /** A new stream is open and {@code sender} writes to it ({@code onStreamEstablished}). */
  void onStreamEstablished(Consumer<Message> sender);

  /**
   * The stream is gone; requests are dropped until the next one ({@code grpcStreamAvailable() ==
   * false}).
   */
  void onStreamClosed();

  /** A response arrived on the current stream: a DiscoveryResponse or a DeltaDiscoveryResponse. */
  void onResponse(Message response);

  /** Why a subscription's update failed ({@code Envoy::Config::ConfigUpdateFailureReason}). */
  enum FailureReason {
    FETCH_TIMED_OUT,
    UPDATE_REJECTED
  }

  /**
   * A subscriber ({@code Config::SubscriptionCallbacks}). An implementation rejects an update by
   * throwing {@link RejectedUpdate}, which the mux turns into a NACK.
   */
  interface SubscriptionCallbacks {
    /** SotW: the resources of this watch found in a response (all of them for a wildcard watch). */
    void onConfigUpdate(List<DecodedResource> resources, String versionInfo);

    /** Delta: what was added or changed, and what the server removed. */
    void onConfigUpdate(
        List<DecodedResource> added, List<String> removed, String systemVersionInfo);

    void onConfigUpdateFailed(FailureReason reason);
  }

  /**
   * An update a subscriber refused, or a response the mux could not decode: its message goes in
   * error_detail.
   */
  final class RejectedUpdate extends RuntimeException {
    RejectedUpdate(String message) {
      super(message);
    }
  }

  /**
   * One resource of a response, decoded as {@code DecodedResourceImpl} does: its name, its version
   * (the response's version_info in SotW, the wrapper's in Delta), and its message, null when the
   * wrapper carried none (a heartbeat, or an unresolved alias).
   */
  record DecodedResource(String name, String version, Message resource) {

    /**
     * The message types the model understands; anything else is rejected as Envoy's decoder would.
     */
    private static final List<TypeUrl> KNOWN =
        List.of(TypeUrl.CLUSTER, TypeUrl.ENDPOINT, TypeUrl.LISTENER, TypeUrl.ROUTE);

    /**
     * A SotW resource: an Any of the type, or a {@code Resource} wrapper around one ({@code
     * DecodedResourceImpl::fromResource}). Throws {@link RejectedUpdate} where Envoy throws.
     */
    static DecodedResource fromSotw(TypeUrl type, Any any, String versionInfo) {
      if (any.is(Resource.class)) {
        Resource wrapper = unpack(any, Resource.class);
        return fromDelta(
            type, wrapper, wrapper.getVersion().isEmpty() ? versionInfo : wrapper.getVersion());
      }
      // GrpcMuxImpl::onDiscoveryResponse: "does not match the message-wide type URL".
      if (!any.getTypeUrl().equals(type.url())) {
        throw new RejectedUpdate(
            any.getTypeUrl() + " does not match the message-wide type URL " + type.url());
      }
      Message message = unpack(type, any);
      return new DecodedResource(nameOf(message), versionInfo, message);
    }

    /** A Delta resource (or a SotW wrapper): the name is the wrapper's, the body may be absent. */
    static DecodedResource fromDelta(TypeUrl type, Resource wrapper, String version) {
      if (!wrapper.hasResource()) {
        return new DecodedResource(wrapper.getName(), version, null);
      }
      return new DecodedResource(wrapper.getName(), version, unpack(type, wrapper.getResource()));
    }

    private static Message unpack(TypeUrl type, Any any) {
      if (!KNOWN.contains(type)) {
        throw new RejectedUpdate("the model has no decoder for " + type.url());
      }
      if (!any.getTypeUrl().equals(type.url())) {
        throw new RejectedUpdate(
            "type URL "
                + any.getTypeUrl()
                + " embedded in an individual Any does not match "
                + "the message-wide type URL "
                + type.url());
      }
      return unpack(any, type.prototype().orElseThrow().getClass().asSubclass(Message.class));
    }

    private static <T extends Message> T unpack(Any any, Class<T> messageClass) {
      try {
        return any.unpack(messageClass);
      } catch (InvalidProtocolBufferException e) {
        throw new RejectedUpdate(
            "Unable to unpack as " + messageClass.getSimpleName() + ": " + e.getMessage());
      }
    }

    /**
     * The name field each type's decoder reads: {@code SubscriptionBase(…, "name" |
     * "cluster_name")}.
     */
    static String nameOf(Message message) {
      if (message instanceof Cluster cluster) {
        return cluster.getName();
      } else if (message instanceof ClusterLoadAssignment assignment) {
        return assignment.getClusterName();
      } else if (message instanceof Listener listener) {
        return listener.getName();
      } else if (message instanceof RouteConfiguration route) {
        return route.getName();
      }
      throw new RejectedUpdate(
          "no name field known for " + message.getDescriptorForType().getFullName());
    }
  }

  /** CDS, EDS, LDS, RDS, or the message name: how a type reads in a transcript line. */
  static String shortType(String typeUrl) {
    if (typeUrl.equals(TypeUrl.CLUSTER.url())) {
      return "CDS";
    } else if (typeUrl.equals(TypeUrl.ENDPOINT.url())) {
      return "EDS";
    } else if (typeUrl.equals(TypeUrl.LISTENER.url())) {
      return "LDS";
    } else if (typeUrl.equals(TypeUrl.ROUTE.url())) {
      return "RDS";
    }
    return typeUrl.isEmpty() ? "(no type)" : typeUrl.substring(typeUrl.lastIndexOf('/') + 1);
  }
}
