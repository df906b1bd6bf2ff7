package io.xdsproxy.bench.jmh;

import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.MethodDescriptor;
import io.xdsproxy.bench.BenchResources;
import io.xdsproxy.bench.MessageInput;
import io.xdsproxy.core.TypeUrl;
import java.util.concurrent.Executor;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Reading one SotW EDS ACK that repeats {@link GroupOfStreams#CLUSTERS} resource names, as Envoy
 * sends after every EDS response: through the ADS method's own request marshaller, with names it
 * has seen before (every ACK after a client's first), against plain protobuf parsing of the same
 * bytes.
 */
@State(Scope.Benchmark)
public class AckBenchmark extends ProxyBenchmark {

  private DirectProxy proxy;
  private MethodDescriptor<DiscoveryRequest, Object> sotw;
  private byte[] ack;

  /** A call's executor (its lane), and the task that reads the ACK on it. */
  private Executor call;

  private Runnable readOnCall;
  private DiscoveryRequest read;

  @Setup
  public void encodeAck() {
    proxy = new DirectProxy(new InMemoryUpstream());
    sotw = proxy.sotw().getMethodDescriptor();
    ack =
        DiscoveryRequest.newBuilder()
            .setVersionInfo("5f0c6e8a91d2b437")
            .setNode(Node.newBuilder().setId("client-0").setCluster("group-0"))
            .addAllResourceNames(BenchResources.clusterNames(GroupOfStreams.CLUSTERS))
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .setResponseNonce("2")
            .build()
            .toByteArray();
    sotw.parseRequest(
        new MessageInput(ack)); // the client's first EDS request: its names are now known
    call = RecordingCall.executorOf(proxy.sotw(), proxy.lanes());
    readOnCall = () -> read = sotw.parseRequest(new MessageInput(ack));
    call.execute(readOnCall); // the call's first: what it read is the call's last request
  }

  /**
   * The proxy's read of an ACK whose names it has seen: they are looked up by their bytes, not
   * decoded.
   */
  @Benchmark
  public DiscoveryRequest sotwEdsAck() {
    return sotw.parseRequest(new MessageInput(ack));
  }

  /**
   * The same ACK read as gRPC reads it, on the executor of the call it came on, which read the same
   * names last: they are compared where they stand, not scanned and hashed.
   */
  @Benchmark
  public DiscoveryRequest sotwEdsAckOfItsCall() {
    call.execute(readOnCall);
    return read;
  }

  /** The baseline: the same bytes parsed by protobuf, 1,000 strings decoded. */
  @Benchmark
  public DiscoveryRequest sotwEdsAckPlainProtobuf() throws InvalidProtocolBufferException {
    return DiscoveryRequest.parseFrom(ack);
  }

  @TearDown
  public void close() {
    proxy.close();
  }

  byte[] ack() {
    return ack;
  }
}
