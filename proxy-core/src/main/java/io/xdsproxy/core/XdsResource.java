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
    String name, String version, Any body, List<String> aliases, Optional<Duration> ttl, boolean doNotCache) {

  public XdsResource {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(version, "version");
    Objects.requireNonNull(body, "body");
    aliases = List.copyOf(aliases);
    Objects.requireNonNull(ttl, "ttl");
  }

  /** A plain resource, its version derived from its content. */
  public static XdsResource of(String name, Any body) {
    return new XdsResource(name, Versions.ofContent(body), body, List.of(), Optional.empty(), false);
  }

  /** Whether this and {@code other} would look the same to a client. */
  public boolean sameAs(XdsResource other) {
    return other != null
        && version.equals(other.version)
        && body.equals(other.body)
        && aliases.equals(other.aliases)
        && ttl.equals(other.ttl)
        && doNotCache == other.doNotCache;
  }

  /** The resource in its {@link Resource} wrapper, as Delta responses and TTL-aware SotW carry it. */
  public Resource toResource() {
    Resource.Builder wrapper = Resource.newBuilder().setName(name).setVersion(version).setResource(body).addAllAliases(aliases);
    ttl.ifPresent(wrapper::setTtl);
    if (doNotCache) {
      wrapper.getCacheControlBuilder().setDoNotCache(true);
    }
    return wrapper.build();
  }
}
