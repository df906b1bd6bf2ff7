package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.against;
import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.app.testing.ProxyFixture;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.XdsTestClient;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Clients that send what no xDS client should: each is told so, and no other client notices. */
class HostileInputTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private ControlPlane controlPlane;
  private XdsProxy proxy;

  @BeforeEach
  void start() throws Exception {
    controlPlane = fixture.controlPlane();
    controlPlane.setSnapshot(
        "fleet",
        Snapshot.create(
            List.of(Resources.cluster("a"), Resources.cluster("b")),
            List.of(Resources.endpoints("a", 8080), Resources.endpoints("b", 8081)),
            List.of(),
            List.of(),
            List.of(),
            "1"));
    proxy = fixture.proxy(against(controlPlane.target()));
  }

  /** Raw bytes as a request of {@code method}, as a broken or hostile client would send them. */
  private Status sendBytes(MethodDescriptor<?, ?> method, byte[] request) throws Exception {
    MethodDescriptor<byte[], byte[]> raw =
        MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.BIDI_STREAMING)
            .setFullMethodName(method.getFullMethodName())
            .setRequestMarshaller(BYTES)
            .setResponseMarshaller(BYTES)
            .build();
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort()).usePlaintext().build();
    try {
      CompletableFuture<Status> ended = new CompletableFuture<>();
      StreamObserver<byte[]> requests =
          ClientCalls.asyncBidiStreamingCall(
              channel.newCall(raw, io.grpc.CallOptions.DEFAULT),
              new StreamObserver<>() {
                @Override
                public void onNext(byte[] response) {}

                @Override
                public void onError(Throwable t) {
                  ended.complete(Status.fromThrowable(t));
                }

                @Override
                public void onCompleted() {
                  ended.complete(Status.OK);
                }
              });
      requests.onNext(request);
      return ended.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    } finally {
      channel.shutdownNow();
    }
  }

  private static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          try {
            return stream.readAllBytes();
          } catch (IOException e) {
            throw new IllegalStateException(e);
          }
        }
      };

  private static final byte[] NOT_A_MESSAGE = {
    0x0a, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f, 0x01
  };

  @Test
  void bytesThatAreNotARequestEndTheStreamWithInvalidArgumentOnSotwAndDelta() throws Exception {
    try (var bystander = XdsTestClient.sotwAds(proxy.xdsPort())) {
      bystander.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("bystander", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      bystander.next(WAIT);

      Status sotw =
          sendBytes(
              AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod(), NOT_A_MESSAGE);
      Status delta =
          sendBytes(
              AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod(), NOT_A_MESSAGE);

      assertThat(sotw.getCode()).as("%s", sotw).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(sotw.getDescription()).contains("not a valid DiscoveryRequest");
      assertThat(delta.getCode()).as("%s", delta).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(delta.getDescription()).contains("not a valid DeltaDiscoveryRequest");
      bystander.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addResourceNames("a")
              .build());
      assertThat(bystander.next(WAIT).getResourcesCount()).isEqualTo(1);
    }
  }

  @Test
  void aResourceNameThatIsNotUtf8IsInvalidArgument() throws Exception {
    byte[] valid =
        DiscoveryRequest.newBuilder()
            .setNode(node("n1", "fleet"))
            .setTypeUrl(TypeUrl.ENDPOINT.url())
            .build()
            .toByteArray();
    byte[] badName = {
      (byte) (DiscoveryRequest.RESOURCE_NAMES_FIELD_NUMBER << 3 | 2),
      3,
      'a',
      (byte) 0xff,
      (byte) 0xfe
    };
    byte[] request = java.util.Arrays.copyOf(valid, valid.length + badName.length);
    System.arraycopy(badName, 0, request, valid.length, badName.length);

    Status status =
        sendBytes(AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod(), request);

    assertThat(status.getCode()).as("%s", status).isEqualTo(Status.Code.INVALID_ARGUMENT);
    assertThat(status.getDescription()).contains("not a valid DiscoveryRequest", "UTF-8");
  }

  @Test
  void aNonceTheProxyNeverSentIsTakenForAStaleOneAndIgnored() {
    try (var client = XdsTestClient.sotwAds(proxy.xdsPort())) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("n1", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      DiscoveryResponse first = client.next(WAIT);

      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo("made-up")
              .setResponseNonce("no-such-nonce")
              .addResourceNames("a")
              .build());

      client.expectNoResponse(Duration.ofMillis(500));
      client.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .setVersionInfo(first.getVersionInfo())
              .setResponseNonce(first.getNonce())
              .addResourceNames("a")
              .build());
      assertThat(client.next(WAIT).getResourcesCount())
          .as("the same request with the real nonce is honoured")
          .isEqualTo(1);
    }
  }

  @Test
  void garbageOnTheXdsPortClosesThatConnectionAndNoOther() throws Exception {
    try (var bystander = XdsTestClient.sotwAds(proxy.xdsPort());
        Socket socket = new Socket("127.0.0.1", proxy.xdsPort())) {
      bystander.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("bystander", "fleet"))
              .setTypeUrl(TypeUrl.CLUSTER.url())
              .build());
      bystander.next(WAIT);
      socket.setSoTimeout((int) WAIT.toMillis());
      OutputStream out = socket.getOutputStream();
      out.write(
          "GET / HTTP/1.1\r\nHost: x\r\n\r\n\u0000\u00ff garbage that is not HTTP/2 at all"
              .getBytes(StandardCharsets.ISO_8859_1));
      out.flush();

      assertThat(closedByPeer(socket.getInputStream()))
          .as("the proxy closed the connection")
          .isTrue();
      bystander.send(
          DiscoveryRequest.newBuilder()
              .setTypeUrl(TypeUrl.ENDPOINT.url())
              .addResourceNames("a")
              .build());
      assertThat(bystander.next(WAIT).getResourcesCount()).isEqualTo(1);
    }
  }

  /** Reads what the peer sends until it closes the connection (true), or the read times out. */
  private static boolean closedByPeer(InputStream in) throws java.io.IOException {
    byte[] buffer = new byte[4096];
    try {
      while (in.read(buffer) >= 0) {
        // what the server says before closing (a GOAWAY) is not what is tested
      }
      return true;
    } catch (java.net.SocketTimeoutException stillOpen) {
      return false;
    } catch (java.net.SocketException reset) {
      return true;
    }
  }
}
