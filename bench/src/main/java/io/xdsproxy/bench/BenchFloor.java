package io.xdsproxy.bench;

import com.google.protobuf.Any;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Message;
import com.google.protobuf.WireFormat;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.Drainable;
import io.grpc.InsecureServerCredentials;
import io.grpc.KnownLength;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerCredentials;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyServerBuilder;
import io.xdsproxy.app.NoHpackTable;
import io.xdsproxy.downstream.xds.AggregatedDiscoveryService;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The floor of the benchmark, in its own process: a bare grpc-java server of the ADS service (SotW
 * and Delta) with no xDS logic, what serving the clients costs in the transport alone. Each round's
 * responses are encoded once, from {@link BenchResources} as the bench control plane serves them,
 * and the same bytes are written to every stream of a variant: a type's whole state when a stream
 * first asks for it, the change when a round is made. They are shaped as the proxy shapes its own
 * (a SotW endpoint change carries the one changed assignment, a SotW Cluster change the whole CDS
 * state, a Delta change the one changed resource; 16-digit versions, a nonce per response), so a
 * client receives as many bytes per update from either.
 *
 * <p>Requests are not decoded: a stream's requests are read up to their type_url until it has asked
 * for clusters and for endpoints, and never again (ACKs are dropped unread).
 *
 * <p>Driven over stdin as {@link BenchControlPlane} is ({@link StdinCommands}).
 *
 * <p>Usage: {@code BenchFloor GROUPS CLUSTERS [ENDPOINTS|CLUSTER [TLS_DIR PROVIDER]]}. The groups
 * are accepted as the control plane's are: every group is served alike. With a directory of {@link
 * BenchTls}'s certificates, mutual TLS on the provider, built as the proxy's xDS port builds its
 * own: what TLS alone costs the transport.
 *
 * <p>Threads: a stream's callbacks run on its Netty event loop (direct executor); an update is
 * written by a pool of one thread per core, each taking a share of the streams. A stream's sends
 * are serialized by its own monitor, uncontended but for a newcomer answered during an update.
 */
public final class BenchFloor {

  /** How the floor reads its clients' requests ({@code -Dfloor.executor}). */
  private enum Reading {
    /** On the event loop, everything requested at once: the transport's own cost. */
    DIRECT,
    /** On the event loop, one at a time ({@code request(1)} there after each). */
    EACH,
    /**
     * On the event loop, one at a time ({@code request(1)} there after each), each then handed to a
     * pool of two threads per core as a task that does nothing: what reading on the event loop and
     * handling elsewhere costs the transport.
     */
    HANDOFF,
    /**
     * As the proxy reads them up to round three: on a pool of two threads per core (gRPC's per-call
     * serializing executor over it), one at a time ({@code request(1)} after each, handed back to
     * the event loop).
     */
    POOL
  }

  private static final Reading READING =
      Reading.valueOf(
          System.getProperty("floor.executor", "direct").toUpperCase(java.util.Locale.ROOT));

  /**
   * The pool requests are read on ({@link Reading#POOL}) or handed to ({@link Reading#HANDOFF}).
   */
  private static final ExecutorService READERS =
      Executors.newFixedThreadPool(
          2 * Runtime.getRuntime().availableProcessors(),
          task -> {
            Thread thread = new Thread(task, "floor-reader");
            thread.setDaemon(true);
            return thread;
          });

  /**
   * With {@code -Dfloor.transport=proxy}, the floor's connections are configured as the proxy's xDS
   * port's are: no HPACK dynamic table ({@link NoHpackTable}), no server keepalive, a maximum
   * connection age of 30 minutes: what the transport alone holds per connection in the proxy.
   */
  private static final boolean AS_THE_PROXY =
      "proxy".equals(System.getProperty("floor.transport", "default"));

  /** Requests handed to the readers ({@link Reading#HANDOFF}). */
  private static final LongAdder HANDED = new LongAdder();

  private static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";
  private static final String EDS =
      "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

  private final int clusters;
  private final BenchResources.Change change;
  private final Set<Stream> streams = ConcurrentHashMap.newKeySet();
  private final LongAdder messages = new LongAdder();
  private final LongAdder bytes = new LongAdder();
  private final int writers = Runtime.getRuntime().availableProcessors();
  private final ExecutorService writing =
      Executors.newFixedThreadPool(
          writers,
          task -> {
            Thread thread = new Thread(task, "floor-writer");
            thread.setDaemon(true);
            return thread;
          });

  /** The newest round's responses; replaced, never changed, by {@link #update}. */
  private volatile Round current;

  private BenchFloor(int clusters, BenchResources.Change change) {
    this.clusters = clusters;
    this.change = change;
    this.current = round(0, null);
  }

  public static void main(String[] args) throws Exception {
    BenchFloor floor =
        new BenchFloor(
            Integer.parseInt(args[1]),
            args.length > 2
                ? BenchResources.Change.valueOf(args[2])
                : BenchResources.Change.ENDPOINTS);
    InetSocketAddress address = new InetSocketAddress("127.0.0.1", 0);
    Optional<BenchTls.Serving> tls = BenchTls.serving(args, 3);
    ServerCredentials credentials =
        tls.isPresent() ? tls.get().credentials() : InsecureServerCredentials.create();
    NettyServerBuilder builder =
        (AS_THE_PROXY
                ? NettyServerBuilder.forAddress(address, NoHpackTable.wrap(credentials))
                    .keepAliveTime(Long.MAX_VALUE, TimeUnit.NANOSECONDS)
                    .permitKeepAliveTime(10, TimeUnit.SECONDS)
                    .permitKeepAliveWithoutCalls(true)
                    .maxConnectionAge(30, TimeUnit.MINUTES)
                    .maxConnectionAgeGrace(10, TimeUnit.SECONDS)
                : NettyServerBuilder.forAddress(address, credentials))
            .addService(floor.service())
            .maxInboundMessageSize(64 * 1024 * 1024);
    if (READING == Reading.POOL) {
      builder.executor(READERS);
    } else {
      builder.directExecutor();
    }
    Server server = builder.build().start();
    StdinCommands.serve(
        server,
        tls.map(BenchTls.Serving::provider),
        floor::update,
        () -> floor.streams.size() + " " + floor.messages.sum() + " " + floor.bytes.sum());
  }

  /**
   * The responses of one round: each encoded once, the same bytes for every stream of a variant.
   */
  private record Round(int number, Responses sotw, Responses delta) {
    Responses of(boolean deltaVariant) {
      return deltaVariant ? delta : sotw;
    }
  }

  /**
   * One variant's responses in a round: the whole state of the type that changes and of the one
   * that does not (a stream's first response of each), the change the round made and, after a
   * Cluster change, the changed cluster's assignment (null for an endpoint change).
   *
   * <p>The assignment is sent as the proxy sends it (downstream-server {@code
   * PushScheduler.sendAssignmentsOfWarming}, rule 18 of interop.md): Envoy completes the warming of
   * a changed cluster only once an assignment for it follows, changed or not.
   */
  private record Responses(
      byte[] changingState, byte[] steadyState, byte[] change, byte[] warming) {}

  /** Encodes the next round and writes its change to every stream; returns the round's number. */
  private int update() throws Exception {
    current = round(current.number() + 1, current);
    Stream[] all = streams.toArray(Stream[]::new);
    List<Future<?>> shares = new ArrayList<>(writers);
    for (int w = 0; w < writers; w++) {
      int first = w;
      shares.add(
          writing.submit(
              () -> {
                for (int i = first; i < all.length; i += writers) {
                  all[i].catchUp();
                }
              }));
    }
    for (Future<?> share : shares) {
      share.get();
    }
    return current.number();
  }

  /**
   * Round {@code number}'s responses: the type that changes is encoded anew, the state of the other
   * is {@code previous}'s. As the proxy sends them, a SotW Cluster change is the whole CDS state (a
   * full-state type), a SotW endpoint change the one changed assignment, and a Delta change the one
   * changed resource.
   */
  private Round round(int number, Round previous) {
    boolean clustersChange = change == BenchResources.Change.CLUSTER;
    String changing = clustersChange ? CDS : EDS;
    String stateNonce = clustersChange ? "1" : "2"; // a stream's first two responses: CDS, EDS
    // After a stream's first two responses (1, 2): one per round, or two after a Cluster change
    // (the assignment that warms it), numbered as the proxy numbers a stream's responses.
    String changeNonce = Integer.toString(clustersChange ? 1 + 2 * number : 2 + number);
    String warmingNonce = Integer.toString(2 + 2 * number);
    List<Message> changed = new ArrayList<>(clusters);
    for (int i = 0; i < clusters; i++) {
      changed.add(
          clustersChange ? BenchResources.cluster(i, number) : BenchResources.endpoints(i, 0));
    }
    if (!clustersChange) {
      changed.set(0, BenchResources.endpoints(0, number));
    }
    List<Message> changeOnly = changed.subList(0, 1);
    Message assignment = BenchResources.endpoints(0, 0);
    Responses sotw =
        new Responses(
            sotw(changing, number, stateNonce, changed),
            previous != null ? previous.sotw().steadyState() : steadyState(false),
            sotw(changing, number, changeNonce, clustersChange ? changed : changeOnly),
            clustersChange ? sotw(EDS, 0, warmingNonce, List.of(assignment)) : null);
    Responses delta =
        new Responses(
            delta(changing, number, stateNonce, changed),
            previous != null ? previous.delta().steadyState() : steadyState(true),
            delta(changing, number, changeNonce, changeOnly),
            clustersChange ? delta(EDS, 0, warmingNonce, List.of(assignment)) : null);
    return new Round(number, sotw, delta);
  }

  /** The whole state of the type that does not change, as of round 0. */
  private byte[] steadyState(boolean delta) {
    boolean clustersChange = change == BenchResources.Change.CLUSTER;
    List<Message> all = new ArrayList<>(clusters);
    for (int i = 0; i < clusters; i++) {
      all.add(clustersChange ? BenchResources.endpoints(i, 0) : BenchResources.cluster(i, 0));
    }
    String typeUrl = clustersChange ? EDS : CDS;
    String nonce = clustersChange ? "2" : "1";
    return delta ? delta(typeUrl, 0, nonce, all) : sotw(typeUrl, 0, nonce, all);
  }

  /** A version as long as the proxy's (16 hex digits), one per round. */
  private static String version(int round) {
    return String.format("%016x", round);
  }

  private static byte[] sotw(String typeUrl, int round, String nonce, List<Message> resources) {
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder()
            .setVersionInfo(version(round))
            .setTypeUrl(typeUrl)
            .setNonce(nonce);
    resources.forEach(resource -> response.addResources(Any.pack(resource)));
    return response.build().toByteArray();
  }

  private static byte[] delta(String typeUrl, int round, String nonce, List<Message> resources) {
    DeltaDiscoveryResponse.Builder response =
        DeltaDiscoveryResponse.newBuilder()
            .setSystemVersionInfo(version(round))
            .setTypeUrl(typeUrl)
            .setNonce(nonce);
    for (int i = 0; i < resources.size(); i++) {
      response.addResources(
          Resource.newBuilder()
              .setName(BenchResources.clusterName(i))
              .setVersion(version(i == 0 ? round : 0))
              .setResource(Any.pack(resources.get(i))));
    }
    return response.build().toByteArray();
  }

  /** The ADS service, both methods, with the marshallers below in place of protobuf's. */
  private ServerServiceDefinition service() {
    return ServerServiceDefinition.builder(AggregatedDiscoveryServiceGrpc.SERVICE_NAME)
        .addMethod(
            AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod().toBuilder(
                    UNREAD, SHARED)
                .build(),
            handler(false))
        .addMethod(
            AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod().toBuilder(
                    UNREAD, SHARED)
                .build(),
            handler(true))
        .build();
  }

  private ServerCallHandler<InputStream, byte[]> handler(boolean delta) {
    return (call, headers) -> {
      Stream stream = new Stream(call, delta);
      call.sendHeaders(new Metadata());
      call.request(READING == Reading.DIRECT ? Integer.MAX_VALUE : 1);
      streams.add(stream);
      return stream;
    };
  }

  /** One client's stream: which types it asked for, and the round of the changing type it holds. */
  private final class Stream extends ServerCall.Listener<InputStream> {
    private final ServerCall<InputStream, byte[]> call;
    private final boolean delta;

    /**
     * Written under the monitor on the stream's event loop, so read there without it (the check
     * that drops an ACK unread).
     */
    private boolean clustersAsked;

    private boolean endpointsAsked;

    /** The round of the changing type this stream was sent, -1 before it asked for that type. */
    private int held = -1;

    Stream(ServerCall<InputStream, byte[]> call, boolean delta) {
      this.call = call;
      this.delta = delta;
    }

    @Override
    public void onMessage(InputStream request) {
      read(request);
      if (READING == Reading.HANDOFF) {
        READERS.execute(HANDED::increment);
      }
      if (READING != Reading.DIRECT) {
        call.request(1);
      }
    }

    private void read(InputStream request) {
      if (clustersAsked && endpointsAsked) {
        return; // an ACK: left unread, gRPC frees its bytes
      }
      String typeUrl = typeUrl(request, delta);
      boolean clusters = CDS.equals(typeUrl);
      if (clusters ? clustersAsked : !EDS.equals(typeUrl) || endpointsAsked) {
        return; // an ACK, or a type the floor does not serve
      }
      answer(clusters);
    }

    /** Sends the whole state of Clusters or of assignments as of the newest round. */
    private synchronized void answer(boolean clusters) {
      if (clusters) {
        clustersAsked = true;
      } else {
        endpointsAsked = true;
      }
      boolean changingType = clusters == (change == BenchResources.Change.CLUSTER);
      Round now = current;
      Responses responses = now.of(delta);
      if (changingType) {
        held = now.number();
        send(responses.changingState());
      } else {
        send(responses.steadyState());
      }
    }

    /**
     * Sends the newest round's change if this stream holds an older one and its transport takes
     * more; else {@link #onReady} comes back for it, so a slow client is sent only the newest.
     */
    synchronized void catchUp() {
      Round now = current;
      if (held >= 0 && held < now.number() && call.isReady()) {
        held = now.number();
        Responses responses = now.of(delta);
        send(responses.change());
        if (responses.warming() != null && endpointsAsked) {
          send(responses.warming());
        }
      }
    }

    private void send(byte[] response) {
      call.sendMessage(response);
      messages.increment();
      bytes.add(response.length);
    }

    @Override
    public void onReady() {
      catchUp();
    }

    @Override
    public void onCancel() {
      streams.remove(this);
    }

    @Override
    public void onComplete() {
      streams.remove(this);
    }
  }

  /**
   * The type_url of a request, read as far as it: the fields before it (the node, a SotW request's
   * resource names) are skipped, not decoded.
   */
  static String typeUrl(InputStream request, boolean delta) {
    int field =
        delta
            ? DeltaDiscoveryRequest.TYPE_URL_FIELD_NUMBER
            : DiscoveryRequest.TYPE_URL_FIELD_NUMBER;
    try {
      CodedInputStream in = CodedInputStream.newInstance(request);
      for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
        if (WireFormat.getTagFieldNumber(tag) == field) {
          return in.readStringRequireUtf8();
        }
        in.skipField(tag);
      }
      return "";
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Hands gRPC's own stream of a request's bytes to the call, which may leave it unread (the
   * proxy's marshaller that does the same).
   */
  private static final MethodDescriptor.Marshaller<InputStream> UNREAD =
      AggregatedDiscoveryService.AS_RECEIVED;

  /** Writes a response encoded once, as it is: every stream reads the same array. */
  private static final MethodDescriptor.Marshaller<byte[]> SHARED =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
          return new SharedBytes(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          throw new UnsupportedOperationException("the floor only sends responses");
        }
      };

  /**
   * A response's bytes, of known length so gRPC sizes the frame at once, drained into the
   * transport's buffer in one write.
   */
  private static final class SharedBytes extends ByteArrayInputStream
      implements KnownLength, Drainable {
    SharedBytes(byte[] bytes) {
      super(bytes);
    }

    @Override
    public int drainTo(OutputStream target) throws IOException {
      int length = count - pos;
      target.write(buf, pos, length);
      pos = count;
      return length;
    }
  }
}
