package io.xdsproxy.downstream.xds;

import io.grpc.stub.ServerCallStreamObserver;
import io.xdsproxy.core.TypeUrl;

/**
 * Where a stream's {@link PushScheduler} writes: the stream's call, each response told to the
 * stream's {@link StreamEvents} as it goes.
 */
final class CallTransport implements PushScheduler.Transport {

  private final ClientStream<?, ?> stream;
  private final ServerCallStreamObserver<EncodedResponse> responses;

  CallTransport(ClientStream<?, ?> stream, ServerCallStreamObserver<EncodedResponse> responses) {
    this.stream = stream;
    this.responses = responses;
  }

  @Override
  public boolean isReady() {
    return responses.isReady();
  }

  @Override
  public void write(TypeUrl type, EncodedResponse response) {
    stream.events().responseSent(stream, type, response.size());
    responses.onNext(response);
  }

  @Override
  public void fannedOut(TypeUrl type, long receivedAt) {
    stream.events().fannedOut(stream, type, receivedAt);
  }
}
