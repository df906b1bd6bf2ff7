package io.xdsproxy.downstream.xds;

import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallExecutorSupplier;
import io.grpc.ServerServiceDefinition;
import io.xdsproxy.core.WorkLanes;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

/**
 * The lane of the worker pool ({@link WorkLanes}) that one downstream xDS call's work goes in: the
 * initial lane until its client has answered (ACK or NACK) a first response of every type it asked
 * for, and while the first request of a type waits to be handled; the change lane otherwise. Both
 * the call's gRPC work (reading and parsing each request, the listener's callbacks: gRPC's call
 * executor, chosen per call by {@link #supplier}) and the stream's own {@link
 * io.xdsproxy.core.SerialExecutor} submit through it, so that a storm of newcomers — whose first
 * SotW EDS request, and the ACK of its answer, name every cluster — is parsed in the lane its first
 * states are written in, behind the updates to the streams already served.
 *
 * <p>gRPC picks the call's executor before the service's handler makes the stream; the handler runs
 * on that executor, so the stream finds its call's lane as the one whose task is running ({@link
 * #forStream}). The request marshaller finds it so too ({@link #running}), and keeps in it what it
 * read the names of the call's last request as ({@link #lastNames}): a SotW client repeats them in
 * every request.
 */
public final class StreamLane implements Executor {

  /** The lane whose task runs on this thread. */
  private static final ThreadLocal<StreamLane> RUNNING = new ThreadLocal<>();

  private final Executor pool;

  /** Written by the stream's executor, read by whoever hands the call or the stream work. */
  private volatile boolean initial = true;

  /**
   * The names of the call's last request that held many, as {@link RequestMarshaller} read them;
   * written and read by the marshaller on gRPC's executor of the call, which runs one task at a
   * time.
   */
  private RequestMarshaller.Decoded<?> lastNames;

  /**
   * Requests that are the first of their type on the stream, read and not yet handled: handling one
   * (the names it asks for subscribed, a first state built and written) is a newcomer's work
   * whatever the stream's lane, so the stream's work goes in the initial lane while one waits.
   */
  private final AtomicInteger firstRequests = new AtomicInteger();

  /**
   * The type URLs, as the client's requests spell them, of the types it has asked for: what tells a
   * type's first request from the rest as gRPC hands it over. Replaced, by the stream's executor,
   * when the client asks for a type it had not; a stream asks for a handful.
   */
  private volatile Set<String> askedTypes = Set.of();

  StreamLane(Executor pool) {
    this.pool = pool;
  }

  /**
   * gRPC's call executors ({@code ServerBuilder.callExecutor}) for a server whose xDS services are
   * {@code xds}: a lane on {@code pool} per call to one of them; every other call (health,
   * reflection, CSDS) gets the server's default executor.
   */
  public static ServerCallExecutorSupplier supplier(
      Executor pool, Collection<ServerServiceDefinition> xds) {
    Set<String> xdsServices =
        xds.stream()
            .map(service -> service.getServiceDescriptor().getName())
            .collect(Collectors.toUnmodifiableSet());
    return new ServerCallExecutorSupplier() {
      @Override
      public <Q, S> Executor getExecutor(ServerCall<Q, S> call, Metadata headers) {
        return xdsServices.contains(call.getMethodDescriptor().getServiceName())
            ? new StreamLane(pool)
            : null;
      }
    };
  }

  /**
   * The lane of the call whose handler is making a stream on this thread, or a new lane on {@code
   * pool} for a call that has none (a server without {@link #supplier}, a benchmark's direct call).
   */
  static StreamLane forStream(Executor pool) {
    StreamLane lane = RUNNING.get();
    return lane != null ? lane : new StreamLane(pool);
  }

  /** The lane whose task runs on this thread, if any. */
  static StreamLane running() {
    return RUNNING.get();
  }

  @SuppressWarnings("unchecked")
  <M> RequestMarshaller.Decoded<M> lastNames() {
    return (RequestMarshaller.Decoded<M>) lastNames;
  }

  void lastNames(RequestMarshaller.Decoded<?> names) {
    lastNames = names;
  }

  /** Moves the call's work, and its stream's, to the initial lane or out of it. */
  void initial(boolean initial) {
    if (this.initial != initial) {
      this.initial = initial;
    }
  }

  /**
   * A request for {@code typeUrl} was read, on gRPC's thread: whether it is the first of its type
   * on the stream, whose handling is a newcomer's work until it is {@linkplain #firstRequestHandled
   * handled}.
   */
  boolean firstRequestRead(String typeUrl) {
    if (askedTypes.contains(typeUrl)) {
      return false;
    }
    firstRequests.incrementAndGet();
    return true;
  }

  void firstRequestHandled() {
    firstRequests.decrementAndGet();
  }

  /**
   * The stream's client asked for {@code typeUrl}, a type the stream serves: its next requests of
   * the type are not first ones. On the stream's executor, before the next request is asked for.
   */
  void asked(String typeUrl) {
    if (!askedTypes.contains(typeUrl)) {
      List<String> asked = new ArrayList<>(askedTypes);
      asked.add(typeUrl);
      askedTypes = Set.copyOf(asked); // read on gRPC's thread: a new set, never changed
    }
  }

  @Override
  public void execute(Runnable task) {
    Runnable run = () -> runMarked(task);
    pool.execute(initial || firstRequests.get() > 0 ? WorkLanes.initial(run) : run);
  }

  private void runMarked(Runnable task) {
    StreamLane outer = RUNNING.get();
    RUNNING.set(this);
    try {
      task.run();
    } finally {
      RUNNING.set(outer);
    }
  }
}
