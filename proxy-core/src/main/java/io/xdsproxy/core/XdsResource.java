package io.xdsproxy.core;

import com.google.protobuf.Any;
import com.google.protobuf.Duration;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One named xDS resource of one type at one version, with the {@link Resource} wrapper fields that
 * travel with it. Immutable and shared: every stream that sends it sends this same object.
 *
 * @param name the resource name ("Resource names")
 * @param version the per-resource version: the upstream's when it gives one (Delta), else derived
 *     from the content, so equal bodies have equal versions across replicas and restarts
 * @param body the resource itself
 * @param aliases other names the resource goes by (VHDS)
 * @param ttl time to live, if the upstream set one ("TTL")
 * @param doNotCache the upstream's {@code cache_control.do_not_cache}
 */
public record XdsResource(
    String name,
    String version,
    Any body,
    List<String> aliases,
    Optional<Duration> ttl,
    boolean doNotCache) {

  public XdsResource {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(body, "body");
    aliases = List.copyOf(aliases);
    Objects.requireNonNull(ttl, "ttl");
  }

  /** A plain resource, its version derived from its content. */
  public static XdsResource of(String name, Any body) {
    return new XdsResource(
        name, Versions.ofContent(body), body, List.of(), Optional.empty(), false);
  }

  /** Whether this and {@code other} would look the same to a client that knows TTLs. */
  public boolean sameAs(XdsResource other) {
    return sameBody(other) && ttl.equals(other.ttl) && doNotCache == other.doNotCache;
  }

  /** Whether this and {@code other} would look the same to a client that does not know TTLs. */
  public boolean sameBody(XdsResource other) {
    return other != null
        && (other == this
            || version.equals(other.version)
                && body.equals(other.body)
                && aliases.equals(other.aliases));
  }

  /**
   * The same resource, refreshed by a heartbeat ("TTL"): equal in every field, but another object,
   * which is how streams, comparing by reference, tell a heartbeat from no news.
   */
  public XdsResource refreshed() {
    return new XdsResource(name, version, body, aliases, ttl, doNotCache);
  }

  /** The heartbeat of this resource: its wrapper without the resource, to refresh its TTL. */
  public Resource toHeartbeat() {
    Resource.Builder heartbeat = Resource.newBuilder().setName(name).setVersion(version);
    ttl.ifPresent(heartbeat::setTtl);
    return heartbeat.build();
  }

  /**
   * The resource in its {@link Resource} wrapper, as Delta responses and TTL-aware SotW carry it.
   */
  public Resource toResource() {
    return toResource(true);
  }

  /**
   * The resource in its {@link Resource} wrapper, its TTL left out for a client that does not know
   * TTLs.
   */
  public Resource toResource(boolean withTtl) {
    Resource.Builder wrapper =
        Resource.newBuilder()
            .setName(name)
            .setVersion(version)
            .setResource(body)
            .addAllAliases(aliases);
    if (withTtl) {
      ttl.ifPresent(wrapper::setTtl);
    }
    if (doNotCache) {
      wrapper.getCacheControlBuilder().setDoNotCache(true);
    }
    return wrapper.build();
  }
}
