package io.xdsproxy.bench.jmh;

import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.xdsproxy.bench.BenchResources;
import io.xdsproxy.bench.MessageInput;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.xds.RequestMarshaller;
import io.xdsproxy.downstream.xds.StreamLane;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Reading one SotW EDS ACK that repeats {@link GroupOfStreams#CLUSTERS} resource names, as Envoy
 * sends after every EDS response: through the proxy's request marshaller, with names it has seen
 * before (every ACK after a client's first), against plain protobuf parsing of the same bytes.
 */
@State(Scope.Benchmark)
public class AckBenchmark extends ProxyBenchmark {

  private byte[] ack;

  /** The lane of a call whose last request held the same names, as the call keeps it. */
  private StreamLane call;

  @Setup
  public void encodeAck() {
    ack =
        DiscoveryRequest.newBuilder()
            .setVersionInfo("5f0c6e8a91d2b437")
            .setNode(Node.newBuilder().setId("client-0").setCluster("group-0"))
            .addAllResourceNames(BenchResources.clusterNames(GroupOfStreams.CLUSTERS))
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .setResponseNonce("2")
            .build()
            .toByteArray();
    // The client's first EDS request: its names are now known.
    RequestMarshaller.SOTW.read(new MessageInput(ack), null);
    call = new StreamLane(Runnable::run);
    // The call's first: what it read is the call's last request.
    RequestMarshaller.SOTW.read(new MessageInput(ack), call);
  }

  /**
   * The proxy's read of an ACK whose names it has seen, on no call: they are looked up by their
   * bytes, not decoded.
   */
  @Benchmark
  public DiscoveryRequest sotwEdsAck() {
    return RequestMarshaller.SOTW.read(new MessageInput(ack), null);
  }

  /**
   * The same ACK read as the proxy's stream reads it, for the call it came on, which read the same
   * names last: they are compared where they stand, not scanned and hashed.
   */
  @Benchmark
  public DiscoveryRequest sotwEdsAckOfItsCall() {
    return RequestMarshaller.SOTW.read(new MessageInput(ack), call);
  }

  /** The baseline: the same bytes parsed by protobuf, 1,000 strings decoded. */
  @Benchmark
  public DiscoveryRequest sotwEdsAckPlainProtobuf() throws InvalidProtocolBufferException {
    return DiscoveryRequest.parseFrom(ack);
  }

  byte[] ack() {
    return ack;
  }
}
