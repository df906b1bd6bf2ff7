package io.xdsproxy.downstream.xds;

import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.KnownLength;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * One downstream call without a transport, for tests that drive the proxy's real service
 * definitions on the calling thread. A request goes in as bytes and is read by the method's own
 * request marshaller, as gRPC reads it; bytes it cannot read end the call with the marshaller's
 * status, as gRPC ends it. Every response is written by the method's own response marshaller and
 * kept as bytes until the test takes it. The transport's readiness is the test's to set.
 *
 * @param <Q> the request message
 */
final class InProcessCall<Q> extends ServerCall<Q, Object> {

  private final MethodDescriptor<Q, Object> method;
  private final Attributes attributes;
  private Listener<Q> listener;
  private int requested;
  private boolean ready = true;
  private boolean cancelled;
  private Status closedWith;

  /**
   * Whether the call was ended by gRPC for bytes that are not a request, rather than by the proxy.
   */
  private boolean unreadable;

  private final List<byte[]> written = new ArrayList<>();

  private InProcessCall(MethodDescriptor<Q, Object> method, SocketAddress peer) {
    this.method = method;
    this.attributes = Attributes.newBuilder().set(Grpc.TRANSPORT_ATTR_REMOTE_ADDR, peer).build();
  }

  /** A call of {@code definition}'s method from {@code peer}, started as a server starts one. */
  static <Q> InProcessCall<Q> start(
      ServerMethodDefinition<Q, Object> definition, SocketAddress peer) {
    InProcessCall<Q> call = new InProcessCall<>(definition.getMethodDescriptor(), peer);
    call.listener = definition.getServerCallHandler().startCall(call, new Metadata());
    call.listener.onReady();
    return call;
  }

  /**
   * The client sends {@code request}, encoded. Only a request the proxy asked for may be sent: one
   * it did not ask for would wait in the transport for ever, so the test fails.
   */
  void receive(byte[] request) {
    if (closedWith != null) {
      throw new IllegalStateException("the call is closed: " + closedWith);
    }
    if (requested == 0) {
      throw new AssertionError(
          method.getFullMethodName()
              + ": the proxy has not asked for the next request: the stream stalls");
    }
    requested--;
    Q message;
    try {
      message = method.parseRequest(new Received(request));
    } catch (StatusRuntimeException e) {
      // What gRPC does when the marshaller refuses a message: it closes the call and cancels it.
      unreadable = true;
      closedWith = e.getStatus();
      cancelled = true;
      listener.onCancel();
      return;
    }
    listener.onMessage(message);
  }

  /** The client ends its side of the stream. */
  void halfClose() {
    listener.onHalfClose();
  }

  /** The transport can take responses again, or can take no more for now. */
  void ready(boolean ready) {
    this.ready = ready;
    if (ready && closedWith == null) {
      listener.onReady();
    }
  }

  /** The responses written since the last call, oldest first, as they would go on the wire. */
  List<byte[]> takeWritten() {
    List<byte[]> taken = List.copyOf(written);
    written.clear();
    return taken;
  }

  /** How the call ended; null while it is open. */
  Status closedWith() {
    return closedWith;
  }

  boolean closedAsUnreadable() {
    return unreadable;
  }

  @Override
  public void request(int count) {
    requested += count;
  }

  @Override
  public void sendHeaders(Metadata headers) {}

  @Override
  public void sendMessage(Object message) {
    if (closedWith != null) {
      throw new IllegalStateException("the proxy wrote a response on a closed call: " + closedWith);
    }
    try (InputStream wire = method.streamResponse(message)) {
      written.add(wire.readAllBytes());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close(Status status, Metadata trailers) {
    if (closedWith != null) {
      throw new IllegalStateException(
          "the call was closed twice: " + closedWith + ", then " + status);
    }
    closedWith = status;
  }

  @Override
  public boolean isCancelled() {
    return cancelled;
  }

  @Override
  public boolean isReady() {
    return ready && closedWith == null;
  }

  @Override
  public Attributes getAttributes() {
    return attributes;
  }

  @Override
  public MethodDescriptor<Q, Object> getMethodDescriptor() {
    return method;
  }

  /** A received message as gRPC hands it to a marshaller: a stream that knows its length. */
  private static final class Received extends ByteArrayInputStream implements KnownLength {
    Received(byte[] bytes) {
      super(bytes);
    }
  }
}
