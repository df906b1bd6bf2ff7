package io.xdsproxy.bench;

import static io.xdsproxy.bench.ReceivedResponse.Part.NONCE;
import static io.xdsproxy.bench.ReceivedResponse.Part.TYPE_URL;
import static io.xdsproxy.bench.ReceivedResponse.Part.VERSION;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.MethodDescriptor.Marshaller;
import java.io.InputStream;
import java.util.List;

/**
 * A DiscoveryRequest or DeltaDiscoveryRequest a simulated client sends, as encoded parts laid end
 * to end: what a client repeats in every request (its node; the 1,000 cluster names of a SotW EDS
 * request, the same bytes for every client) is encoded once, and only the few fields copied from
 * the response it ACKs are encoded per request. Concatenated encodings are one message; the parts
 * come in field order, so the bytes are those protobuf would write for the same request.
 */
record EncodedRequest(byte[]... parts) {

  static {
    if (DeltaDiscoveryRequest.RESOURCE_NAMES_SUBSCRIBE_FIELD_NUMBER
        != DiscoveryRequest.RESOURCE_NAMES_FIELD_NUMBER) {
      throw new AssertionError("one encoding of the cluster names no longer serves both requests");
    }
  }

  /** Writes each request's parts to the wire; the response side is {@link ReceivedResponse}. */
  static final Marshaller<EncodedRequest> MARSHALLER =
      new Marshaller<>() {
        @Override
        public InputStream stream(EncodedRequest request) {
          return new MessageInput(request.parts);
        }

        @Override
        public EncodedRequest parse(InputStream stream) {
          throw new UnsupportedOperationException("the clients only send requests");
        }
      };

  /** {@code node} as a SotW request's field, encoded once per client. */
  static byte[] sotwNode(Node node) {
    return DiscoveryRequest.newBuilder().setNode(node).build().toByteArray();
  }

  /** {@code node} as a Delta request's field, encoded once per client. */
  static byte[] deltaNode(Node node) {
    return DeltaDiscoveryRequest.newBuilder().setNode(node).build().toByteArray();
  }

  /**
   * {@code names} as a request's {@code resource_names} (SotW) or {@code resource_names_subscribe}
   * (Delta): field 3 of both.
   */
  static byte[] names(List<String> names) {
    return DiscoveryRequest.newBuilder().addAllResourceNames(names).build().toByteArray();
  }

  static byte[] sotwTypeUrl(String typeUrl) {
    return DiscoveryRequest.newBuilder().setTypeUrl(typeUrl).build().toByteArray();
  }

  static byte[] deltaTypeUrl(String typeUrl) {
    return DeltaDiscoveryRequest.newBuilder().setTypeUrl(typeUrl).build().toByteArray();
  }

  /**
   * A SotW ACK of {@code response}: its version, the node, {@code names} (the names the client
   * wants of that type, none for a wildcard subscription), its type and its nonce.
   */
  static EncodedRequest sotwAck(byte[] node, ReceivedResponse response, byte[] names) {
    return new EncodedRequest(
        response.encode(DiscoveryRequest.VERSION_INFO_FIELD_NUMBER, VERSION),
        node,
        names,
        response.encode(
            DiscoveryRequest.TYPE_URL_FIELD_NUMBER,
            TYPE_URL,
            DiscoveryRequest.RESPONSE_NONCE_FIELD_NUMBER,
            NONCE));
  }

  /** A Delta ACK of {@code response}: the node, its type and its nonce. */
  static EncodedRequest deltaAck(byte[] node, ReceivedResponse response) {
    return new EncodedRequest(
        node,
        response.encode(
            DeltaDiscoveryRequest.TYPE_URL_FIELD_NUMBER,
            TYPE_URL,
            DeltaDiscoveryRequest.RESPONSE_NONCE_FIELD_NUMBER,
            NONCE));
  }

  /** The request's bytes, all parts copied into one array. */
  byte[] toByteArray() {
    MessageInput input = new MessageInput(parts);
    byte[] all = new byte[input.available()];
    for (int at = 0; at < all.length; ) {
      at += input.read(all, at, all.length - at);
    }
    return all;
  }
}
