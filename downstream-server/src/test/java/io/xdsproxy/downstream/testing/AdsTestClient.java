package io.xdsproxy.downstream.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A raw SotW ADS client over a real gRPC channel: the test decides every request, and sees every
 * response. Keeps a transcript of both, printed when an expectation fails.
 */
public final class AdsTestClient implements AutoCloseable {

  private final ManagedChannel channel;
  private final StreamObserver<DiscoveryRequest> requests;
  private final BlockingQueue<DiscoveryResponse> responses = new LinkedBlockingQueue<>();
  private final CompletableFuture<Status> end = new CompletableFuture<>();
  private final List<String> transcript = java.util.Collections.synchronizedList(new ArrayList<>());

  public AdsTestClient(int port) {
    channel = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    requests = AggregatedDiscoveryServiceGrpc.newStub(channel).streamAggregatedResources(new StreamObserver<>() {
      @Override
      public void onNext(DiscoveryResponse response) {
        transcript.add("<- " + shortText(response));
        responses.add(response);
      }

      @Override
      public void onError(Throwable t) {
        transcript.add("<- error " + Status.fromThrowable(t));
        end.complete(Status.fromThrowable(t));
      }

      @Override
      public void onCompleted() {
        end.complete(Status.OK);
      }
    });
  }

  public static Node node(String id, String cluster) {
    return Node.newBuilder().setId(id).setCluster(cluster).build();
  }

  public void send(DiscoveryRequest request) {
    transcript.add("-> " + request.toString().replace('\n', ' '));
    requests.onNext(request);
  }

  /** The next response, failing with the transcript if none comes within {@code timeout}. */
  public DiscoveryResponse next(Duration timeout) {
    try {
      DiscoveryResponse response = responses.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(response).as("a response within %s; transcript:%n%s", timeout, transcript()).isNotNull();
      return response;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** Asserts that no response arrives within {@code quiet}. */
  public void expectNoResponse(Duration quiet) {
    try {
      DiscoveryResponse response = responses.poll(quiet.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(response).as("no response; transcript:%n%s", transcript()).isNull();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** How the stream ended, waiting up to {@code timeout}. */
  public Status awaitEnd(Duration timeout) {
    try {
      return end.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError("the stream did not end within " + timeout + "; transcript:\n" + transcript(), e);
    }
  }

  public String transcript() {
    synchronized (transcript) {
      return String.join("\n", transcript);
    }
  }

  private static String shortText(DiscoveryResponse response) {
    return "version=" + response.getVersionInfo() + " type=" + response.getTypeUrl() + " nonce=" + response.getNonce()
        + " resources=" + response.getResourcesCount();
  }

  @Override
  public void close() {
    requests.onCompleted();
    channel.shutdownNow();
  }
}
