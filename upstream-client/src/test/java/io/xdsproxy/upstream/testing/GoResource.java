package io.xdsproxy.upstream.testing;

import com.google.protobuf.Any;
import com.google.protobuf.Message;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * One resource as go-control-plane's caches hold it ({@code cachedResource},
 * pkg/cache/v3/cached_resource.go): the message, its name, and its content hash, which is the
 * per-resource version of Delta ({@code HashResource}, a SHA-256 of the marshalled bytes,
 * pkg/cache/v3/resource.go; the same hash {@code Snapshot.ConstructVersionMap} puts in the version
 * map). {@code doNotCache} is this suite's extension: go-control-plane has no such knob, so it is
 * marshalled the way go marshals the one wrapped field it does have, a TTL ({@code
 * RawResponse.marshalTTLResource}, pkg/cache/v3/cache.go).
 */
record GoResource(String name, Message message, boolean doNotCache, String hash) {

  static GoResource of(String name, Message message, boolean doNotCache) {
    return new GoResource(name, message, doNotCache, hash(message));
  }

  /**
   * The same resource marked (or not) do_not_cache; it keeps its hash, since go hashes the resource
   * and never a wrapper.
   */
  GoResource withDoNotCache(boolean mark) {
    return new GoResource(name, message, mark, hash);
  }

  /**
   * What goes in a SotW response's {@code resources}: the bytes under the request's type URL
   * ({@code buildResource} in {@code marshalTTLResource}), or a {@code Resource} wrapper under the
   * Resource type URL when the resource is marked do_not_cache, as go wraps a resource with a TTL.
   */
  Any sotwAny(String typeUrl) {
    Any plain = Any.newBuilder().setTypeUrl(typeUrl).setValue(message.toByteString()).build();
    if (!doNotCache) {
      return plain;
    }
    return Any.pack(
        Resource.newBuilder()
            .setName(name)
            .setResource(plain)
            .setCacheControl(Resource.CacheControl.newBuilder().setDoNotCache(true))
            .build());
  }

  /**
   * What goes in a Delta response ({@code RawDeltaResponse.GetDeltaDiscoveryResponse}): name,
   * bytes, content hash.
   */
  Resource deltaResource(String typeUrl) {
    Resource.Builder resource =
        Resource.newBuilder()
            .setName(name)
            .setVersion(hash)
            .setResource(Any.newBuilder().setTypeUrl(typeUrl).setValue(message.toByteString()));
    if (doNotCache) {
      resource.setCacheControl(Resource.CacheControl.newBuilder().setDoNotCache(true));
    }
    return resource.build();
  }

  private static String hash(Message message) {
    try {
      return HexFormat.of()
          .formatHex(MessageDigest.getInstance("SHA-256").digest(message.toByteArray()));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }
}
