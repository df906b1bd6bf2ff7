package io.xdsproxy.core;

import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.List;

/**
 * The client features ({@code Node.client_features}) the proxy acts on: a client announces them in
 * its node, and the proxy announces them to its own upstream.
 */
public final class ClientFeatures {

  /** "TTL": the client takes resources with a TTL, and heartbeats that refresh them. */
  public static final String SUPPORTS_TTL = "xds.config.supports-resource-ttl";

  /**
   * A SotW response may wrap its resources in {@code Resource}: how a TTL, a heartbeat and {@code
   * cache_control.do_not_cache} travel in State of the World.
   */
  public static final String SUPPORTS_RESOURCE_IN_SOTW = "xds.config.supports-resource-in-sotw";

  private ClientFeatures() {}

  /**
   * Whether {@code node}'s client announced TTL support ({@link #SUPPORTS_TTL}); in State of the
   * World it must also take resources wrapped in {@code Resource} ({@link
   * #SUPPORTS_RESOURCE_IN_SOTW}).
   */
  public static boolean knowsTtl(Node node, boolean sotw) {
    List<String> features = node.getClientFeaturesList();
    return features.contains(SUPPORTS_TTL)
        && (!sotw || features.contains(SUPPORTS_RESOURCE_IN_SOTW));
  }
}
