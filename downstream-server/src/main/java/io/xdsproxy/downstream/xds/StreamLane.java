package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.WorkLanes;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The lane of the worker pool ({@link WorkLanes}) that one downstream xDS stream's work goes in:
 * the initial lane until its client has answered (ACK or NACK) a first response of every type it
 * asked for, and while the first request of a type waits to be handled; the change lane otherwise.
 * The stream's own {@link io.xdsproxy.core.SerialExecutor} submits through it, so that a storm of
 * newcomers — whose first SotW EDS request, and the ACK of its answer, name every cluster — is
 * handled in the lane its first states are written in, behind the updates to the streams already
 * served.
 *
 * <p>The call's requests are read where gRPC delivers them, on the connection's event loop, one at
 * a time; what the request marshaller read the names of the call's last request as ({@link
 * #lastNames}) is kept here, for the next: a SotW client repeats them in every request.
 */
public final class StreamLane implements Executor {

  private final Executor pool;

  /** Written by the stream's executor, read by whoever hands the stream work. */
  private volatile boolean initial = true;

  /**
   * The names of the call's last request that held many, as {@link RequestMarshaller} read them;
   * null when it held few. Written and read by the marshaller on the call's transport thread, which
   * delivers one request at a time.
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

  /** A lane on {@code pool}, for one stream's work. */
  public StreamLane(Executor pool) {
    this.pool = pool;
  }

  @SuppressWarnings("unchecked")
  <M> RequestMarshaller.Decoded<M> lastNames() {
    return (RequestMarshaller.Decoded<M>) lastNames;
  }

  void lastNames(RequestMarshaller.Decoded<?> names) {
    if (lastNames != names) {
      // Not stored again when it is the same: each store into this old object dirties a card that
      // G1's refinement threads then scan, and every ACK repeats the names.
      lastNames = names;
    }
  }

  /** Whether the stream's work goes in the initial lane now. */
  boolean initial() {
    return initial;
  }

  /** Moves the stream's work to the initial lane or out of it. */
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
    pool.execute(initial || firstRequests.get() > 0 ? WorkLanes.initial(task) : task);
  }
}
