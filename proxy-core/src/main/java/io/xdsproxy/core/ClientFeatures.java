package io.xdsproxy.core;

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
}
