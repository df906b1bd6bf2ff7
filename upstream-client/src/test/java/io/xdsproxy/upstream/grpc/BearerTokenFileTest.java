package io.xdsproxy.upstream.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.CompositeChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.ControlPlane;
import io.xdsproxy.upstream.testing.TokenAuthenticator;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The token file as the proxy reads it, and the one thing no configuration reaches: a token is not
 * sent over plaintext unless allowed, even on a channel built around the flags' check. The proxy
 * sending it to control planes that require it: {@code UpstreamTokenTest} in proxy-app.
 */
class BearerTokenFileTest {

  @TempDir Path dir;

  private Path tokenFile(String contents) throws IOException {
    Path file = dir.resolve("token");
    Files.writeString(file, contents);
    return file;
  }

  @Test
  void theTokenIsTheFileWithoutItsTrailingNewlineAndARewriteIsReadOnTheNextCall() throws Exception {
    Path file = tokenFile("eyJhbGciOi.first\n");
    BearerTokenFile token = BearerTokenFile.read(file, false);
    assertThat(token.current()).isEqualTo("eyJhbGciOi.first");

    Files.writeString(file, "eyJhbGciOi.second");

    assertThat(token.current()).isEqualTo("eyJhbGciOi.second");
  }

  @Test
  void aFileGoneAfterStartKeepsTheLastGoodTokenInUse() throws Exception {
    Path file = tokenFile("eyJhbGciOi.good");
    BearerTokenFile token = BearerTokenFile.read(file, false);

    Files.delete(file);

    assertThat(token.current()).isEqualTo("eyJhbGciOi.good");
  }

  @Test
  void aFileWithNoTokenIsRefusedAtStartNamingItAndNotItsContents() throws Exception {
    assertThatThrownBy(() -> BearerTokenFile.read(tokenFile(" \n"), false))
        .isInstanceOf(IOException.class)
        .hasMessageContaining(dir.resolve("token").toString())
        .hasMessageContaining("empty");
    assertThatThrownBy(() -> BearerTokenFile.read(tokenFile("secret-part\nsecret-part-2"), false))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("a character a header cannot carry")
        .hasMessageNotContaining("secret-part");
    assertThatThrownBy(() -> BearerTokenFile.read(dir.resolve("missing"), false))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("missing");
  }

  @Test
  void aCallOverPlaintextFailsNamingTheFlagAndTheTokenNeverLeaves() throws Exception {
    TokenAuthenticator authenticator = new TokenAuthenticator("eyJhbGciOi.secret");
    try (ControlPlane controlPlane =
        new ControlPlane(InsecureServerCredentials.create(), authenticator)) {
      ManagedChannel channel = plaintextWithToken(controlPlane, "eyJhbGciOi.secret", false);
      try {
        Status status = firstCallStatus(channel);

        assertThat(status.getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
        assertThat(status.getDescription())
            .contains("only over TLS", "--upstream-token-over-plaintext")
            .doesNotContain("eyJhbGciOi");
        assertThat(authenticator.seen()).as("no call reached the control plane").isEmpty();
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void overPlaintextWhenAllowedTheTokenIsSent() throws Exception {
    TokenAuthenticator authenticator = new TokenAuthenticator("eyJhbGciOi.allowed");
    try (ControlPlane controlPlane =
        new ControlPlane(InsecureServerCredentials.create(), authenticator)) {
      controlPlane.setSnapshot(
          "fleet",
          Snapshot.create(
              List.of(Cluster.newBuilder().setName("c").build()),
              List.of(),
              List.of(),
              List.of(),
              List.of(),
              "1"));
      ManagedChannel channel = plaintextWithToken(controlPlane, "eyJhbGciOi.allowed\n", true);
      try {
        assertThat(firstCallStatus(channel).getCode()).isEqualTo(Status.Code.OK);
        assertThat(authenticator.seen()).containsExactly("Bearer eyJhbGciOi.allowed");
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  /**
   * A plaintext channel to {@code controlPlane} whose calls carry the token in a file of {@code
   * contents}.
   */
  private ManagedChannel plaintextWithToken(
      ControlPlane controlPlane, String contents, boolean overPlaintext) throws IOException {
    return NettyChannelBuilder.forTarget(
            controlPlane.target(),
            CompositeChannelCredentials.create(
                InsecureChannelCredentials.create(),
                BearerTokenFile.read(tokenFile(contents), overPlaintext)))
        .build();
  }

  /** Opens an ADS stream on {@code channel}, asks for clusters: OK once answered, else its end. */
  private static Status firstCallStatus(ManagedChannel channel) throws Exception {
    CompletableFuture<Status> ended = new CompletableFuture<>();
    StreamObserver<DiscoveryRequest> requests =
        AggregatedDiscoveryServiceGrpc.newStub(channel)
            .streamAggregatedResources(
                new StreamObserver<>() {
                  @Override
                  public void onNext(DiscoveryResponse response) {
                    ended.complete(Status.OK);
                  }

                  @Override
                  public void onError(Throwable t) {
                    ended.complete(Status.fromThrowable(t));
                  }

                  @Override
                  public void onCompleted() {
                    ended.complete(Status.OK);
                  }
                });
    requests.onNext(
        DiscoveryRequest.newBuilder()
            .setNode(Node.newBuilder().setId("n").setCluster("fleet"))
            .setTypeUrl(TypeUrl.CLUSTER.url())
            .build());
    Status status = ended.get(10, TimeUnit.SECONDS);
    if (status.isOk()) {
      requests.onCompleted();
    }
    return status;
  }
}
