package io.xdsproxy.upstream.grpc;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ClientResponseObserver;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

/**
 * How a stream of one ADS variant is started on a channel: the one place the upstream side names
 * the variants' gRPC methods, for group sessions and audits alike.
 *
 * @param <Q> the request message
 * @param <R> the response message
 */
@FunctionalInterface
interface AdsCall<Q, R> {

  AdsCall<DiscoveryRequest, DiscoveryResponse> SOTW =
      (channel, observer) ->
          AggregatedDiscoveryServiceGrpc.newStub(channel).streamAggregatedResources(observer);

  /**
   * The SotW method with its requests sent as encoded parts ({@link SotwRequest}) and its responses
   * left as the bytes of their resources ({@link SotwResponse}): what a group's session speaks,
   * where most of what arrives is resent unchanged and every response is ACKed with the same names.
   */
  AdsCall<SotwRequest, SotwResponse> SOTW_ENCODED =
      new AdsCall<>() {
        private final MethodDescriptor<SotwRequest, SotwResponse> method =
            AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod().toBuilder(
                    SotwRequest.MARSHALLER, SotwResponse.MARSHALLER)
                .build();

        @Override
        public void start(
            Channel channel, ClientResponseObserver<SotwRequest, SotwResponse> observer) {
          ClientCalls.asyncBidiStreamingCall(
              channel.newCall(method, CallOptions.DEFAULT), observer);
        }
      };

  AdsCall<DeltaDiscoveryRequest, DeltaDiscoveryResponse> DELTA =
      (channel, observer) ->
          AggregatedDiscoveryServiceGrpc.newStub(channel).deltaAggregatedResources(observer);

  /** Starts the call; {@code observer} is given its request stream before it starts. */
  void start(Channel channel, ClientResponseObserver<Q, R> observer);

  /**
   * Starts the call, its request stream given to {@code requests} at once, on this thread; each
   * response goes to {@code responses} and its end to {@code end}, on {@code executor}, in order. A
   * stream the server completes ends as UNAVAILABLE: an xDS stream never ends by itself.
   */
  default void start(
      Channel channel,
      Executor executor,
      Consumer<ClientCallStreamObserver<Q>> requests,
      Consumer<R> responses,
      Consumer<Status> end) {
    start(
        channel,
        new ClientResponseObserver<Q, R>() {
          @Override
          public void beforeStart(ClientCallStreamObserver<Q> stream) {
            requests.accept(stream);
          }

          @Override
          public void onNext(R response) {
            executor.execute(() -> responses.accept(response));
          }

          @Override
          public void onError(Throwable t) {
            Status status = Status.fromThrowable(t);
            executor.execute(() -> end.accept(status));
          }

          @Override
          public void onCompleted() {
            executor.execute(
                () -> end.accept(Status.UNAVAILABLE.withDescription("closed by the server")));
          }
        });
  }
}
