package io.xdsproxy.app;

import static io.xdsproxy.app.testing.ProxyFixture.serving;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.channelz.v1.ChannelzGrpc;
import io.grpc.channelz.v1.GetServersRequest;
import io.grpc.channelz.v1.GetServersResponse;
import io.grpc.channelz.v1.GetSocketRequest;
import io.grpc.channelz.v1.SocketRef;
import io.grpc.reflection.v1.ServerReflectionGrpc;
import io.grpc.reflection.v1.ServerReflectionRequest;
import io.grpc.reflection.v1.ServerReflectionResponse;
import io.grpc.reflection.v1.ServiceResponse;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.app.testing.ProxyFixture;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The tools an operator points at the xDS port without the protos: gRPC server reflection, as
 * {@code grpcurl list} and {@code describe} use it, and channelz.
 */
class ReflectionTest {

  private static final Duration WAIT = Duration.ofSeconds(10);

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private XdsProxy proxy;
  private ManagedChannel channel;

  @BeforeEach
  void start() throws Exception {
    proxy = fixture.proxy(serving(Path.of("../deploy/examples/resources")));
    channel = ManagedChannelBuilder.forAddress("127.0.0.1", proxy.xdsPort()).usePlaintext().build();
  }

  @AfterEach
  void stop() {
    channel.shutdownNow();
  }

  /** One request on a reflection stream, and its one answer. */
  private ServerReflectionResponse ask(ServerReflectionRequest request) throws Exception {
    CompletableFuture<ServerReflectionResponse> answer = new CompletableFuture<>();
    StreamObserver<ServerReflectionRequest> requests =
        ServerReflectionGrpc.newStub(channel)
            .serverReflectionInfo(
                new StreamObserver<>() {
                  @Override
                  public void onNext(ServerReflectionResponse response) {
                    answer.complete(response);
                  }

                  @Override
                  public void onError(Throwable t) {
                    answer.completeExceptionally(t);
                  }

                  @Override
                  public void onCompleted() {}
                });
    requests.onNext(request);
    try {
      return answer.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } finally {
      requests.onCompleted();
    }
  }

  @Test
  void reflectionListsEveryServiceOfTheXdsPortAndDescribesAds() throws Exception {
    ServerReflectionResponse list =
        ask(ServerReflectionRequest.newBuilder().setListServices("").build());

    assertThat(list.getListServicesResponse().getServiceList())
        .extracting(ServiceResponse::getName)
        .contains(
            "envoy.service.discovery.v3.AggregatedDiscoveryService",
            "envoy.service.listener.v3.ListenerDiscoveryService",
            "envoy.service.route.v3.RouteDiscoveryService",
            "envoy.service.route.v3.ScopedRoutesDiscoveryService",
            "envoy.service.route.v3.VirtualHostDiscoveryService",
            "envoy.service.cluster.v3.ClusterDiscoveryService",
            "envoy.service.endpoint.v3.EndpointDiscoveryService",
            "envoy.service.secret.v3.SecretDiscoveryService",
            "envoy.service.runtime.v3.RuntimeDiscoveryService",
            "envoy.service.status.v3.ClientStatusDiscoveryService",
            "grpc.health.v1.Health",
            "grpc.channelz.v1.Channelz",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection");

    ServerReflectionResponse ads =
        ask(
            ServerReflectionRequest.newBuilder()
                .setFileContainingSymbol("envoy.service.discovery.v3.AggregatedDiscoveryService")
                .build());
    List<FileDescriptorProto> files =
        ads.getFileDescriptorResponse().getFileDescriptorProtoList().stream()
            .map(
                bytes -> {
                  try {
                    return FileDescriptorProto.parseFrom(bytes);
                  } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                    throw new AssertionError(e);
                  }
                })
            .toList();
    assertThat(files).as("the file defining ADS, first").isNotEmpty();
    assertThat(files.get(0).getName()).isEqualTo("envoy/service/discovery/v3/ads.proto");
    assertThat(files.get(0).getServiceList())
        .singleElement()
        .satisfies(
            service -> {
              assertThat(service.getName()).isEqualTo("AggregatedDiscoveryService");
              assertThat(service.getMethodList())
                  .extracting(method -> method.getName())
                  .containsExactly("StreamAggregatedResources", "DeltaAggregatedResources");
            });
  }

  @Test
  void channelzShowsTheXdsServerListeningOnItsPort() {
    ChannelzGrpc.ChannelzBlockingStub channelz =
        ChannelzGrpc.newBlockingStub(channel)
            .withDeadlineAfter(WAIT.toMillis(), TimeUnit.MILLISECONDS);

    GetServersResponse servers = channelz.getServers(GetServersRequest.getDefaultInstance());

    List<Integer> ports =
        servers.getServerList().stream()
            .flatMap(server -> server.getListenSocketList().stream())
            .map(SocketRef::getSocketId)
            .map(
                id ->
                    channelz
                        .getSocket(GetSocketRequest.newBuilder().setSocketId(id).build())
                        .getSocket()
                        .getLocal()
                        .getTcpipAddress()
                        .getPort())
            .toList();
    assertThat(ports).as("the ports the JVM's gRPC servers listen on").contains(proxy.xdsPort());
  }
}
