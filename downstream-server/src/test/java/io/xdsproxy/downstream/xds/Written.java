package io.xdsproxy.downstream.xds;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.ResourceDecoder;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

/**
 * A response a call wrote, as a test reads it: its type's simple name, its nonce, its version
 * (SotW; empty for Delta), the names of the resources it carries, in its order, and the names it
 * removes (Delta).
 */
record Written(
    String type, String nonce, String version, List<String> names, List<String> removed) {

  /** The SotW responses {@code call} wrote since the last call, oldest first. */
  static List<Written> sotw(InProcessCall<InputStream> call) throws InvalidProtocolBufferException {
    List<Written> written = new ArrayList<>();
    for (byte[] bytes : call.takeWritten()) {
      DiscoveryResponse response = DiscoveryResponse.parseFrom(bytes);
      List<String> names = new ArrayList<>();
      for (Any body : response.getResourcesList()) {
        names.add(ResourceDecoder.nameOf(body.getValue()));
      }
      written.add(
          new Written(
              simpleName(response.getTypeUrl()),
              response.getNonce(),
              response.getVersionInfo(),
              names,
              List.of()));
    }
    return written;
  }

  /** The Delta responses {@code call} wrote since the last call, oldest first. */
  static List<Written> delta(InProcessCall<InputStream> call)
      throws InvalidProtocolBufferException {
    List<Written> written = new ArrayList<>();
    for (byte[] bytes : call.takeWritten()) {
      DeltaDiscoveryResponse response = DeltaDiscoveryResponse.parseFrom(bytes);
      written.add(
          new Written(
              simpleName(response.getTypeUrl()),
              response.getNonce(),
              "",
              response.getResourcesList().stream().map(Resource::getName).toList(),
              response.getRemovedResourcesList()));
    }
    return written;
  }

  private static String simpleName(String typeUrl) {
    return typeUrl.substring(typeUrl.lastIndexOf('.') + 1);
  }
}
