package io.xdsproxy.app;

import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.xdsproxy.core.SerialExecutor;
import java.util.concurrent.Executor;

/**
 * Runs a call's callbacks on the worker pool, one at a time and in order, rather than on the
 * connection's event loop: for the services the xDS port serves besides xDS (health, client status,
 * reflection, channelz). The port's server hands every call's callbacks to its event loop directly,
 * so that an xDS request is read, and an ACK handled, without a hand-off; a client status dump of
 * thousands of clients, or reflection's descriptors, must not hold a loop that serves thousands of
 * streams. The handler's {@code startCall} still runs on the loop: gRPC's stubs only make the
 * call's listener there.
 */
final class OnWorkers implements ServerInterceptor {

  private final Executor pool;

  private OnWorkers(Executor pool) {
    this.pool = pool;
  }

  /** {@code service} with each of its calls' callbacks run on {@code pool}. */
  static ServerServiceDefinition intercept(ServerServiceDefinition service, Executor pool) {
    return ServerInterceptors.intercept(service, new OnWorkers(pool));
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    ServerCall.Listener<Q> listener = next.startCall(call, headers);
    SerialExecutor executor =
        new SerialExecutor(pool, call.getMethodDescriptor().getFullMethodName());
    // The call's context (its deadline, its cancellation) goes with each callback, as gRPC's own
    // executor attaches it.
    Context context = Context.current();
    return new ServerCall.Listener<>() {
      private void run(Runnable callback) {
        executor.execute(context.wrap(callback));
      }

      @Override
      public void onMessage(Q message) {
        run(() -> listener.onMessage(message));
      }

      @Override
      public void onHalfClose() {
        run(listener::onHalfClose);
      }

      @Override
      public void onCancel() {
        run(listener::onCancel);
      }

      @Override
      public void onComplete() {
        run(listener::onComplete);
      }

      @Override
      public void onReady() {
        run(listener::onReady);
      }
    };
  }
}
