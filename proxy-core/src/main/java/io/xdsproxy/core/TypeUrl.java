package io.xdsproxy.core;

import com.google.protobuf.Message;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.TypedExtensionConfig;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.ScopedRouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.Secret;
import io.envoyproxy.envoy.service.runtime.v3.Runtime;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * An xDS resource type, named by its type URL ("Resource Types" in the transport protocol).
 *
 * <p>The v3 types the spec lists are known: the proxy can parse them to validate what the upstream
 * sends, knows which are sent as full state in SotW, and where they stand in the make-before-break
 * push order of an ADS stream. Any other well-formed type URL is carried through as an opaque type.
 */
public record TypeUrl(String url) implements Comparable<TypeUrl> {

  public static final String PREFIX = "type.googleapis.com/";

  public static final TypeUrl CLUSTER = known(Cluster.getDescriptor().getFullName());
  public static final TypeUrl ENDPOINT = known(ClusterLoadAssignment.getDescriptor().getFullName());
  public static final TypeUrl LISTENER = known(Listener.getDescriptor().getFullName());
  public static final TypeUrl ROUTE = known(RouteConfiguration.getDescriptor().getFullName());
  public static final TypeUrl VIRTUAL_HOST = known(VirtualHost.getDescriptor().getFullName());
  public static final TypeUrl SCOPED_ROUTE =
      known(ScopedRouteConfiguration.getDescriptor().getFullName());
  public static final TypeUrl SECRET = known(Secret.getDescriptor().getFullName());
  public static final TypeUrl RUNTIME = known(Runtime.getDescriptor().getFullName());
  public static final TypeUrl EXTENSION_CONFIG =
      known(TypedExtensionConfig.getDescriptor().getFullName());

  /**
   * The make-before-break order of "Eventual consistency considerations": CDS, EDS, LDS, RDS, then
   * VHDS and SRDS, then the rest. Types not listed come after all of these.
   */
  private static final List<TypeUrl> PUSH_ORDER =
      List.of(
          CLUSTER,
          ENDPOINT,
          LISTENER,
          ROUTE,
          VIRTUAL_HOST,
          SCOPED_ROUTE,
          SECRET,
          RUNTIME,
          EXTENSION_CONFIG);

  private static final Map<TypeUrl, Message> PROTOTYPES =
      Map.of(
          CLUSTER, Cluster.getDefaultInstance(),
          ENDPOINT, ClusterLoadAssignment.getDefaultInstance(),
          LISTENER, Listener.getDefaultInstance(),
          ROUTE, RouteConfiguration.getDefaultInstance(),
          VIRTUAL_HOST, VirtualHost.getDefaultInstance(),
          SCOPED_ROUTE, ScopedRouteConfiguration.getDefaultInstance(),
          SECRET, Secret.getDefaultInstance(),
          RUNTIME, Runtime.getDefaultInstance(),
          EXTENSION_CONFIG, TypedExtensionConfig.getDefaultInstance());

  private static final Map<String, TypeUrl> BY_URL =
      PUSH_ORDER.stream().collect(Collectors.toUnmodifiableMap(TypeUrl::url, Function.identity()));

  /** Longest type URL accepted; real ones are well under 200 characters. */
  public static final int MAX_LENGTH = 512;

  public TypeUrl {
    if (url == null || url.isEmpty()) {
      throw new IllegalArgumentException("type URL is empty");
    }
  }

  private static TypeUrl known(String messageName) {
    return new TypeUrl(PREFIX + messageName);
  }

  /**
   * Parses a type URL as a client or upstream sent it. Known types return their constant; other
   * URLs of the form {@code <host>/<message.name>} are accepted as opaque types.
   *
   * @throws IllegalArgumentException with a message fit for a gRPC status when the URL is malformed
   */
  public static TypeUrl parse(String url) {
    TypeUrl known = BY_URL.get(url);
    if (known != null) {
      return known;
    }
    if (url == null || url.isEmpty()) {
      throw new IllegalArgumentException("type_url is empty");
    }
    if (url.length() > MAX_LENGTH) {
      throw new IllegalArgumentException("type_url is longer than " + MAX_LENGTH + " characters");
    }
    int slash = url.lastIndexOf('/');
    String message = url.substring(slash + 1);
    if (slash <= 0
        || message.isEmpty()
        || !message.matches("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+")) {
      throw new IllegalArgumentException(
          "type_url '" + url + "' is not of the form type.googleapis.com/<message>");
    }
    return new TypeUrl(url);
  }

  /**
   * The known v3 types, in push order: every label value a metric by type has before any traffic.
   */
  public static List<TypeUrl> known() {
    return PUSH_ORDER;
  }

  public boolean isKnown() {
    return BY_URL.containsKey(url);
  }

  /**
   * Whether a SotW response of this type carries the complete state of the world ("Grouping
   * Resources into Responses"): true for Listener and Cluster only.
   */
  public boolean isFullStateInSotw() {
    return this.equals(LISTENER) || this.equals(CLUSTER);
  }

  /**
   * The prototype of the message this type carries, for parsing and validating; empty if opaque.
   */
  public Optional<Message> prototype() {
    return Optional.ofNullable(PROTOTYPES.get(this));
  }

  /** The position in the make-before-break push order; unknown types share the last position. */
  public int pushOrder() {
    int index = PUSH_ORDER.indexOf(this);
    return index >= 0 ? index : PUSH_ORDER.size();
  }

  /** The message name without the host part, for logs and metric labels. */
  public String shortName() {
    return url.substring(url.lastIndexOf('/') + 1);
  }

  @Override
  public int compareTo(TypeUrl other) {
    int byOrder = Integer.compare(pushOrder(), other.pushOrder());
    return byOrder != 0 ? byOrder : url.compareTo(other.url);
  }

  @Override
  public String toString() {
    return url;
  }
}
