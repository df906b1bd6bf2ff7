package io.xdsproxy.app.testing;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Message;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A raw xDS client over a real gRPC channel, for any of the streaming methods (SotW or Delta, ADS
 * or per-type): the test decides every request and sees every response. Keeps a transcript of both,
 * printed when an expectation fails.
 *
 * @param <Q> the request message
 * @param <R> the response message
 */
public final class XdsTestClient<Q extends Message, R extends Message> implements AutoCloseable {

  /**
   * The channel this client made, shut down with it; null on a channel shared with other clients.
   */
  private final ManagedChannel ownChannel;

  private final ClientCallStreamObserver<Q> requests;
  private final BlockingQueue<R> responses = new LinkedBlockingQueue<>();
  private final CompletableFuture<Status> end = new CompletableFuture<>();
  private final List<String> transcript = Collections.synchronizedList(new ArrayList<>());

  public XdsTestClient(int port, MethodDescriptor<Q, R> method) {
    this(port, InsecureChannelCredentials.create(), method);
  }

  /** A client connecting with {@code credentials}: TLS, maybe with a client certificate. */
  public XdsTestClient(int port, ChannelCredentials credentials, MethodDescriptor<Q, R> method) {
    this(NettyChannelBuilder.forAddress("127.0.0.1", port, credentials).build(), true, method);
  }

  /**
   * A stream on {@code channel}, which other clients may share (thousands of streams need not be
   * thousands of connections); closing the client ends its stream, not the channel.
   */
  public XdsTestClient(Channel channel, MethodDescriptor<Q, R> method) {
    this(channel, false, method);
  }

  private XdsTestClient(Channel channel, boolean owned, MethodDescriptor<Q, R> method) {
    ownChannel = owned ? (ManagedChannel) channel : null;
    requests =
        (ClientCallStreamObserver<Q>)
            ClientCalls.asyncBidiStreamingCall(
                channel.newCall(method, CallOptions.DEFAULT),
                new StreamObserver<R>() {
                  @Override
                  public void onNext(R response) {
                    transcript.add("<- " + oneLine(response));
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

  public static XdsTestClient<DiscoveryRequest, DiscoveryResponse> sotwAds(int port) {
    return new XdsTestClient<>(
        port, AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod());
  }

  public static XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> deltaAds(int port) {
    return new XdsTestClient<>(
        port, AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod());
  }

  public static XdsTestClient<DiscoveryRequest, DiscoveryResponse> sotwAds(
      int port, ChannelCredentials credentials) {
    return new XdsTestClient<>(
        port, credentials, AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod());
  }

  public static XdsTestClient<DeltaDiscoveryRequest, DeltaDiscoveryResponse> deltaAds(
      int port, ChannelCredentials credentials) {
    return new XdsTestClient<>(
        port, credentials, AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod());
  }

  public static Node node(String id, String cluster) {
    return Node.newBuilder().setId(id).setCluster(cluster).build();
  }

  /**
   * How many clusters a new plaintext SotW client of group {@code group} is sent first by the proxy
   * on {@code port}; 0 if nothing comes within {@code wait}.
   */
  public static int clustersServed(int port, String group, Duration wait) {
    try (var client = sotwAds(port)) {
      client.send(
          DiscoveryRequest.newBuilder()
              .setNode(node("client-1", group))
              .setTypeUrl("type.googleapis.com/envoy.config.cluster.v3.Cluster")
              .build());
      DiscoveryResponse response = client.next(wait);
      return response == null ? 0 : response.getResourcesCount();
    }
  }

  public void send(Q request) {
    transcript.add("-> " + oneLine(request));
    requests.onNext(request);
  }

  /** The next response, failing with the transcript if none comes within {@code timeout}. */
  public R next(Duration timeout) {
    try {
      R response = responses.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
      assertThat(response)
          .as("a response within %s; transcript:%n%s", timeout, transcript())
          .isNotNull();
      return response;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /**
   * The next response, or empty as soon as the stream ends without one (a refused TLS handshake, a
   * refused node) or when none comes within {@code timeout}.
   */
  public Optional<R> nextUnlessEnded(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    try {
      while (System.nanoTime() < deadline) {
        R response = responses.poll(50, TimeUnit.MILLISECONDS);
        if (response != null) {
          return Optional.of(response);
        }
        if (end.isDone()) {
          return Optional.ofNullable(responses.poll());
        }
      }
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** The next response if one has arrived, without waiting. */
  public Optional<R> poll() {
    return Optional.ofNullable(responses.poll());
  }

  /** Whether the stream has ended, by either side. */
  public boolean ended() {
    return end.isDone();
  }

  /** How the stream ended, by either side, if it has: without waiting. */
  public Optional<Status> endStatus() {
    return Optional.ofNullable(end.getNow(null));
  }

  /** Cancels the stream at once, as a client that goes away mid-response does (RST_STREAM). */
  public void cancel() {
    transcript.add("-> cancel");
    requests.cancel("the test client went away", null);
  }

  /** Asserts that no response arrives within {@code quiet}. */
  public void expectNoResponse(Duration quiet) {
    try {
      R response = responses.poll(quiet.toMillis(), TimeUnit.MILLISECONDS);
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
      throw new AssertionError(
          "the stream did not end within " + timeout + "; transcript:\n" + transcript(), e);
    }
  }

  public String transcript() {
    synchronized (transcript) {
      return String.join("\n", transcript);
    }
  }

  /** A message on one line, resource bodies left out: the transcript is for reading. */
  private static String oneLine(Message message) {
    Message.Builder shown = message.toBuilder();
    var resources = shown.getDescriptorForType().findFieldByName("resources");
    int count = resources == null ? 0 : shown.getRepeatedFieldCount(resources);
    if (count > 0) {
      shown.clearField(resources);
    }
    return shown.build().toString().replaceAll("\\s+", " ")
        + (count > 0 ? " (" + count + " resources)" : "");
  }

  @Override
  public void close() {
    if (ownChannel != null) {
      requests.onCompleted();
      ownChannel.shutdownNow();
    } else if (!end.isDone()) {
      requests.cancel("the test client closed", null);
    }
  }
}
