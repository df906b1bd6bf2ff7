package io.xdsproxy.bench.jmh;

import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.bench.MessageInput;
import io.xdsproxy.core.TypeUrl;
import java.io.InputStream;
import java.net.SocketAddress;
import java.util.List;

/**
 * One simulated Envoy on one ADS stream, subscribing as Envoy does (and as bench's LoadClients
 * does): wildcard CDS, then EDS for every cluster, ACKing each response; its node goes with every
 * request. The client only acts when told to, so a benchmark decides what it measures.
 *
 * <p>Requests are made of pre-encoded parts (the node, the names a SotW client repeats in every EDS
 * request, the same bytes for every client) and the few fields that change, so that the client's
 * share of an ACK is small next to the proxy's share of reading it.
 */
abstract sealed class EnvoyClient permits EnvoyClient.Sotw, EnvoyClient.Delta {

  static final ByteString CDS = ByteString.copyFromUtf8(TypeUrl.CLUSTER.url());
  static final ByteString EDS = ByteString.copyFromUtf8(TypeUrl.ENDPOINT.url());
  private static final byte[] NO_NAMES = new byte[0];

  /** The call this client's stream is. */
  abstract RecordingCall<?> call();

  /** The first request of the stream: every Cluster (wildcard). */
  abstract void subscribeClusters();

  /** The ClusterLoadAssignments of every cluster, by name. */
  abstract void subscribeEndpoints();

  /** ACKs the last response. */
  abstract void ack();

  /**
   * A State-of-the-World client: each request of a type repeats every name it wants of that type.
   */
  static final class Sotw extends EnvoyClient {
    private final RecordingCall<InputStream> call;
    private final byte[] node;

    /** The resource_names of an EDS request, encoded once for every client of the group. */
    private final byte[] endpointNames;

    /**
     * @param endpointNames {@link #encodeNames} of every cluster
     */
    Sotw(DirectProxy proxy, Node node, SocketAddress peer, byte[] endpointNames) {
      this.call = RecordingCall.start(proxy.sotw(), peer);
      this.node = DiscoveryRequest.newBuilder().setNode(node).build().toByteArray();
      this.endpointNames = endpointNames;
    }

    /** {@code names} as a DiscoveryRequest's resource_names field. */
    static byte[] encodeNames(List<String> names) {
      return DiscoveryRequest.newBuilder().addAllResourceNames(names).build().toByteArray();
    }

    @Override
    RecordingCall<InputStream> call() {
      return call;
    }

    @Override
    void subscribeClusters() {
      call.receive(
          new MessageInput(
              node, DiscoveryRequest.newBuilder().setTypeUrlBytes(CDS).build().toByteArray()));
    }

    @Override
    void subscribeEndpoints() {
      call.receive(
          new MessageInput(
              node,
              endpointNames,
              DiscoveryRequest.newBuilder().setTypeUrlBytes(EDS).build().toByteArray()));
    }

    @Override
    void ack() {
      ByteString type = call.lastResponseField(DiscoveryResponse.TYPE_URL_FIELD_NUMBER);
      byte[] version =
          DiscoveryRequest.newBuilder()
              .setVersionInfoBytes(
                  call.lastResponseField(DiscoveryResponse.VERSION_INFO_FIELD_NUMBER))
              .build()
              .toByteArray();
      byte[] typeAndNonce =
          DiscoveryRequest.newBuilder()
              .setTypeUrlBytes(type)
              .setResponseNonceBytes(call.lastResponseField(DiscoveryResponse.NONCE_FIELD_NUMBER))
              .build()
              .toByteArray();
      // In field order, as Envoy writes it: version_info, node, resource_names, type_url,
      // response_nonce.
      call.receive(
          new MessageInput(
              version, node, type.equals(EDS) ? endpointNames : NO_NAMES, typeAndNonce));
    }
  }

  /** An incremental client: names are sent once, on subscribing; an ACK is its nonce. */
  static final class Delta extends EnvoyClient {
    private final RecordingCall<InputStream> call;
    private final byte[] node;
    private final List<String> endpointNames;

    Delta(DirectProxy proxy, Node node, SocketAddress peer, List<String> endpointNames) {
      this.call = RecordingCall.start(proxy.delta(), peer);
      this.node = DeltaDiscoveryRequest.newBuilder().setNode(node).build().toByteArray();
      this.endpointNames = endpointNames;
    }

    @Override
    RecordingCall<InputStream> call() {
      return call;
    }

    @Override
    void subscribeClusters() {
      call.receive(
          new MessageInput(
              node, DeltaDiscoveryRequest.newBuilder().setTypeUrlBytes(CDS).build().toByteArray()));
    }

    @Override
    void subscribeEndpoints() {
      call.receive(
          new MessageInput(
              node,
              DeltaDiscoveryRequest.newBuilder()
                  .setTypeUrlBytes(EDS)
                  .addAllResourceNamesSubscribe(endpointNames)
                  .build()
                  .toByteArray()));
    }

    @Override
    void ack() {
      call.receive(
          new MessageInput(
              node,
              DeltaDiscoveryRequest.newBuilder()
                  .setTypeUrlBytes(
                      call.lastResponseField(DeltaDiscoveryResponse.TYPE_URL_FIELD_NUMBER))
                  .setResponseNonceBytes(
                      call.lastResponseField(DeltaDiscoveryResponse.NONCE_FIELD_NUMBER))
                  .build()
                  .toByteArray()));
    }
  }
}
