package io.xdsproxy.upstream.testing;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc.AggregatedDiscoveryServiceImplBase;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * An ADS server on loopback (SotW and incremental) whose every response the test writes by hand:
 * the control plane that sends what no well-behaved one would (a resource of the wrong type, bytes
 * that do not parse), and whose every request the test reads.
 */
public final class ScriptedControlPlane implements AutoCloseable {

  private final BlockingQueue<DiscoveryRequest> requests = new LinkedBlockingQueue<>();
  private final BlockingQueue<DeltaDiscoveryRequest> deltaRequests = new LinkedBlockingQueue<>();
  private volatile StreamObserver<DiscoveryResponse> stream;
  private volatile StreamObserver<DeltaDiscoveryResponse> deltaStream;
  private final java.util.concurrent.atomic.AtomicInteger streamsOpened =
      new java.util.concurrent.atomic.AtomicInteger();
  private final java.util.concurrent.atomic.AtomicInteger streamsCancelled =
      new java.util.concurrent.atomic.AtomicInteger();
  private final Server server;

  public ScriptedControlPlane() throws IOException {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(
                new AggregatedDiscoveryServiceImplBase() {
                  @Override
                  public StreamObserver<DiscoveryRequest> streamAggregatedResources(
                      StreamObserver<DiscoveryResponse> responses) {
                    stream = responses;
                    streamsOpened.incrementAndGet();
                    return new StreamObserver<>() {
                      @Override
                      public void onNext(DiscoveryRequest request) {
                        requests.add(request);
                      }

                      @Override
                      public void onError(Throwable t) {
                        streamsCancelled.incrementAndGet();
                      }

                      @Override
                      public void onCompleted() {
                        responses.onCompleted();
                      }
                    };
                  }

                  @Override
                  public StreamObserver<DeltaDiscoveryRequest> deltaAggregatedResources(
                      StreamObserver<DeltaDiscoveryResponse> responses) {
                    deltaStream = responses;
                    streamsOpened.incrementAndGet();
                    return new StreamObserver<>() {
                      @Override
                      public void onNext(DeltaDiscoveryRequest request) {
                        deltaRequests.add(request);
                      }

                      @Override
                      public void onError(Throwable t) {
                        streamsCancelled.incrementAndGet();
                      }

                      @Override
                      public void onCompleted() {
                        responses.onCompleted();
                      }
                    };
                  }
                })
            .build()
            .start();
  }

  public String target() {
    return "127.0.0.1:" + server.getPort();
  }

  /** The next request the proxy sent, failing if none comes within {@code timeout}. */
  public DiscoveryRequest nextRequest(Duration timeout) throws InterruptedException {
    DiscoveryRequest request = requests.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    assertThat(request).as("a request from the proxy within %s", timeout).isNotNull();
    return request;
  }

  /** Fails if the proxy sends a SotW request within {@code quiet}. */
  public void expectNoRequest(Duration quiet) throws InterruptedException {
    DiscoveryRequest request = requests.poll(quiet.toMillis(), TimeUnit.MILLISECONDS);
    assertThat(request).as("no request from the proxy within %s", quiet).isNull();
  }

  /** How many streams (SotW and incremental) the proxy has opened. */
  public int streamsOpened() {
    return streamsOpened.get();
  }

  /** How many streams the proxy has cancelled or broken off. */
  public int streamsCancelled() {
    return streamsCancelled.get();
  }

  /** Sends {@code response} on the latest stream. */
  public void send(DiscoveryResponse response) {
    stream.onNext(response);
  }

  /** Ends the latest stream with {@code status}, as a control plane that fails or restarts does. */
  public void endStream(io.grpc.Status status) {
    stream.onError(status.asRuntimeException());
  }

  /** The next incremental request from the proxy, failing if none comes within {@code timeout}. */
  public DeltaDiscoveryRequest nextDeltaRequest(Duration timeout) throws InterruptedException {
    DeltaDiscoveryRequest request = deltaRequests.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    assertThat(request).as("an incremental request from the proxy within %s", timeout).isNotNull();
    return request;
  }

  /** Sends {@code response} on the latest incremental stream. */
  public void send(DeltaDiscoveryResponse response) {
    deltaStream.onNext(response);
  }

  @Override
  public void close() {
    server.shutdownNow();
  }
}
