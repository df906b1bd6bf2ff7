package io.xdsproxy.app.testing;

import io.envoyproxy.envoy.service.status.v3.ClientStatusDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.status.v3.ClientStatusRequest;
import io.envoyproxy.envoy.service.status.v3.ClientStatusResponse;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.Collection;
import java.util.concurrent.CompletableFuture;

/** Client status (CSDS) streams of a test. */
public final class ClientStatusStreams {

  private ClientStatusStreams() {}

  /**
   * Opens a CSDS stream on {@code channel} whose responses go to {@code responses} and whose end
   * completes {@code end}; its requests go to what is returned.
   */
  public static StreamObserver<ClientStatusRequest> open(
      Channel channel, Collection<ClientStatusResponse> responses, CompletableFuture<Status> end) {
    return ClientStatusDiscoveryServiceGrpc.newStub(channel)
        .streamClientStatus(
            new StreamObserver<>() {
              @Override
              public void onNext(ClientStatusResponse response) {
                responses.add(response);
              }

              @Override
              public void onError(Throwable t) {
                end.complete(Status.fromThrowable(t));
              }

              @Override
              public void onCompleted() {
                end.complete(Status.OK);
              }
            });
  }
}
