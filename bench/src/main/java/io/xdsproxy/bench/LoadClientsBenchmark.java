package io.xdsproxy.bench;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor.Marshaller;
import io.grpc.protobuf.ProtoUtils;
import io.xdsproxy.bench.ReceivedResponse.Expected;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What one SotW client of {@link LoadClients} spends on one response, on the load generator's side
 * of the cores it shares with the server: reading the response, looking for the changed resource of
 * the round after the one it holds and of the one after that (as {@link LoadClients} does when the
 * control plane's newest round is known), and writing its ACK. {@code scan} is how the clients do
 * it ({@link ReceivedResponse}, {@link EncodedRequest}); {@code protobuf} is how they did before (a
 * full decode with grpc's protobuf marshaller, {@code List.contains}, an ACK built and encoded by
 * protobuf). The responses: the whole CDS state (1,000 clusters, 80 KiB) that every SotW client is
 * sent on a Cluster change, and the one assignment it is sent on an endpoint change, whose ACK
 * repeats the 1,000 cluster names.
 *
 * <p>Run as the benchmarks of package {@code jmh} are (their settings, copied: a benchmark outside
 * that package cannot inherit them): {@code java -cp bench/target/xds-bench.jar
 * org.openjdk.jmh.Main LoadClientsBenchmark -prof gc}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class LoadClientsBenchmark {

  static final int CLUSTERS = 1000;
  private static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
  private static final String EDS =
      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
  private static final byte[] EDS_BYTES = EDS.getBytes(StandardCharsets.UTF_8);
  private static final byte[] NO_NAMES = new byte[0];

  private static final Marshaller<DiscoveryResponse> PROTOBUF_RESPONSES =
      ProtoUtils.marshaller(DiscoveryResponse.getDefaultInstance());
  private static final Marshaller<DiscoveryRequest> PROTOBUF_REQUESTS =
      ProtoUtils.marshaller(DiscoveryRequest.getDefaultInstance());

  /**
   * {@code clusters}: the whole CDS state of round 1; {@code endpoints}: cluster 0's of round 1.
   */
  @Param({"clusters", "endpoints"})
  public String response;

  private byte[] encoded;
  private boolean endpoints;
  private Node node;
  private List<ByteString> nameBytes;
  private Any[] protobufExpected;

  private byte[] nodeField;
  private byte[] names;
  private Expected[] expected;

  private final Framer framer = new Framer();

  @Setup
  public void encodeResponse() {
    endpoints = response.equals("endpoints");
    BenchResources.Change change =
        endpoints ? BenchResources.Change.ENDPOINTS : BenchResources.Change.CLUSTER;
    DiscoveryResponse.Builder sent =
        DiscoveryResponse.newBuilder()
            .setVersionInfo("5f0c6e8a91d2b437")
            .setTypeUrl(endpoints ? EDS : CDS)
            .setNonce("12");
    if (endpoints) {
      sent.addResources(Any.pack(BenchResources.endpoints(0, 1)));
    } else {
      BenchResources.clusters(CLUSTERS, 1).forEach(c -> sent.addResources(Any.pack(c)));
    }
    encoded = sent.build().toByteArray();
    node = Node.newBuilder().setId("client-0").setCluster("group-0").build();
    List<String> clusterNames = BenchResources.clusterNames(CLUSTERS);
    nameBytes = clusterNames.stream().map(ByteString::copyFromUtf8).toList();
    // The candidates in the order a client tries them: the round after the newest known, then the
    // newest (round 1, which the response carries).
    protobufExpected =
        new Any[] {BenchResources.changed(change, 2), BenchResources.changed(change, 1)};
    nodeField = EncodedRequest.sotwNode(node);
    names = EncodedRequest.names(clusterNames);
    expected = new Expected[] {Expected.of(protobufExpected[0]), Expected.of(protobufExpected[1])};
  }

  /** The clients' way: the response scanned in place, the ACK written from parts. */
  @Benchmark
  public int scan() throws IOException {
    ReceivedResponse read = ReceivedResponse.MARSHALLER.parse(new Message(encoded));
    int held = -1;
    for (int candidate = 0; candidate < expected.length && held < 0; candidate++) {
      held = read.sotwCarries(expected[candidate]) ? 2 - candidate : -1;
    }
    EncodedRequest ack =
        EncodedRequest.sotwAck(nodeField, read, read.typeIs(EDS_BYTES) ? names : NO_NAMES);
    ((Drainable) EncodedRequest.MARSHALLER.stream(ack)).drainTo(framer);
    return held;
  }

  /** The clients' way before: a full decode, and an ACK built and encoded by protobuf. */
  @Benchmark
  public int protobuf() throws IOException {
    DiscoveryResponse read = PROTOBUF_RESPONSES.parse(new Message(encoded));
    int held = -1;
    for (int candidate = 0; candidate < protobufExpected.length && held < 0; candidate++) {
      held = read.getResourcesList().contains(protobufExpected[candidate]) ? 2 - candidate : -1;
    }
    DiscoveryRequest.Builder ack =
        DiscoveryRequest.newBuilder()
            .setNode(node)
            .setTypeUrl(read.getTypeUrl())
            .setVersionInfo(read.getVersionInfo())
            .setResponseNonce(read.getNonce());
    if (read.getTypeUrl().equals(EDS)) {
      nameBytes.forEach(ack::addResourceNamesBytes);
    }
    ((Drainable) PROTOBUF_REQUESTS.stream(ack.build())).drainTo(framer);
    return held;
  }

  /**
   * Where gRPC drains a request: its framer copies the bytes into the transport's buffers, so an
   * ACK's bytes are copied here as well, into one buffer used round and round.
   */
  private static final class Framer extends OutputStream {
    private final byte[] buffer = new byte[64 * 1024];
    private int at;

    @Override
    public void write(int b) {
      buffer[at] = (byte) b;
      at = (at + 1) % buffer.length;
    }

    @Override
    public void write(byte[] bytes, int offset, int length) {
      while (length > 0) {
        int count = Math.min(length, buffer.length - at);
        System.arraycopy(bytes, offset, buffer, at, count);
        at = (at + count) % buffer.length;
        offset += count;
        length -= count;
      }
    }
  }

  /** A received message as gRPC hands it to a marshaller: a stream that knows its length. */
  private static final class Message extends ByteArrayInputStream implements KnownLength {
    Message(byte[] bytes) {
      super(bytes);
    }
  }
}
