package io.xdsproxy.upstream.testing;

import io.grpc.Status;
import io.grpc.SynchronizationContext;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a go-control-plane stream goroutine is, in Java: one {@link SynchronizationContext} owns the
 * stream's state and runs, one at a time and in arrival order, what go's {@code process} loop
 * selects on — the client's requests and the cache's responses. A cache answers a watch by {@link
 * #post posting} to the context (go: a send on the watch's buffered channel), which never blocks
 * and never runs stream code under the cache's lock; a pool thread then drains the context.
 *
 * @param <R> the response message of the stream (SotW or Delta)
 */
final class GoStreamLink<R> {

  private static final Logger log = LoggerFactory.getLogger(GoStreamLink.class);

  /**
   * One stream's request handling, as the go server's per-stream loop; every method runs in the
   * link's context.
   */
  interface Handler<Q> {
    void onRequest(Q request);

    /**
     * The stream ended (client gone, server stopped, or the handler failed it): cancel every watch.
     */
    void close();
  }

  private final long id;
  private final SynchronizationContext context;
  private final Executor drainer;
  private final ServerCallStreamObserver<R> out;
  private final Runnable onSent;
  private Handler<?> handler;
  private boolean ended;

  GoStreamLink(long id, ServerCallStreamObserver<R> out, Executor drainer, Runnable onSent) {
    this.id = id;
    this.context = new SynchronizationContext(this::uncaught);
    this.out = out;
    this.drainer = drainer;
    this.onSent = onSent;
  }

  long id() {
    return id;
  }

  /** The handler whose stream this is, closed if it throws. */
  void attach(Handler<?> handler) {
    this.handler = handler;
  }

  /** Runs {@code task} in the stream's context: a request from the client, or the stream's end. */
  void run(Runnable task) {
    context.execute(task);
  }

  /**
   * Queues {@code task} (a response the cache computed) behind whatever the stream has queued, from
   * any thread, holding any lock.
   */
  void post(Runnable task) {
    context.executeLater(task);
    try {
      drainer.execute(context::drain);
    } catch (RejectedExecutionException e) {
      // The model is closed: its streams are gone, so is the answer.
    }
  }

  /** Sends one response, the go server's {@code stream.Send}. */
  void send(R response) {
    context.throwIfNotInThisSynchronizationContext();
    if (ended || out.isCancelled()) {
      return;
    }
    // Counted before it is written: a client that has it finds it counted.
    onSent.run();
    out.onNext(response);
  }

  /** Ends the stream with {@code status}, as the go handler returning an error does. */
  void fail(Status status) {
    context.throwIfNotInThisSynchronizationContext();
    if (!ended) {
      ended = true;
      if (!out.isCancelled()) {
        out.onError(status.asRuntimeException());
      }
    }
  }

  /** Ends the stream with OK, as the go handler returning nil when the client closed its side. */
  void complete() {
    context.throwIfNotInThisSynchronizationContext();
    if (!ended) {
      ended = true;
      if (!out.isCancelled()) {
        out.onCompleted();
      }
    }
  }

  void assertConfined() {
    context.throwIfNotInThisSynchronizationContext();
  }

  private void uncaught(Thread thread, Throwable error) {
    log.warn("go-control-plane model: stream {} failed", id, error);
    fail(
        Status.INTERNAL
            .withDescription("go-control-plane model failed on stream " + id + ": " + error)
            .withCause(error));
    if (handler != null) {
      handler.close();
    }
  }
}
