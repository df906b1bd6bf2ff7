package io.xdsproxy.bench.jmh;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.WireFormat;
import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.SocketAddress;
import java.util.Arrays;

/**
 * One downstream call as the proxy's service sees it, with no transport behind it. Requests go in
 * as bytes, handed over by the method's own request marshaller as gRPC would; every message the
 * proxy writes is turned into its wire form by the method's own response marshaller and read out,
 * as a transport writes it to its socket buffer. The call keeps the last message's bytes and
 * counts; it is always ready and never cancelled.
 *
 * @param <Q> the request message
 */
final class RecordingCall<Q> extends ServerCall<Q, Object> {

  private final MethodDescriptor<Q, Object> method;
  private final Attributes attributes;

  private Listener<Q> listener;
  private int requested;
  private long responses;
  private long bytesWritten;

  /** The last response's wire form, in a buffer reused from one response to the next. */
  private byte[] last = new byte[1024];

  private int lastLength;

  /** The response before it, in the other buffer: the two are swapped, never copied. */
  private byte[] previous = new byte[1024];

  private int previousLength;
  private Status closedWith;

  private RecordingCall(MethodDescriptor<Q, Object> method, SocketAddress peer) {
    this.method = method;
    this.attributes = Attributes.newBuilder().set(Grpc.TRANSPORT_ATTR_REMOTE_ADDR, peer).build();
  }

  /**
   * A call of {@code definition}'s method from a client at {@code peer}, started as a server starts
   * one, on the calling thread: the proxy's server calls its xDS methods on the connection's event
   * loop, directly.
   */
  static <Q> RecordingCall<Q> start(
      ServerMethodDefinition<Q, Object> definition, SocketAddress peer) {
    RecordingCall<Q> call = new RecordingCall<>(definition.getMethodDescriptor(), peer);
    call.listener = definition.getServerCallHandler().startCall(call, new Metadata());
    call.listener.onReady();
    return call;
  }

  /**
   * The client sent {@code message}, encoded: handed to the proxy as gRPC hands it, which reads it
   * on the calling thread. As with gRPC's manual flow control, only a message the proxy asked for
   * is delivered.
   */
  void receive(InputStream message) {
    if (requested == 0) {
      throw new IllegalStateException(
          method.getFullMethodName() + ": the proxy has not asked for another request");
    }
    requested--;
    listener.onMessage(method.parseRequest(message));
  }

  /** The client ends its side of the stream. */
  void halfClose() {
    listener.onHalfClose();
  }

  @Override
  public void request(int count) {
    requested += count;
  }

  @Override
  public void sendHeaders(Metadata headers) {}

  @Override
  public void sendMessage(Object message) {
    byte[] free = previous;
    previous = last;
    previousLength = lastLength;
    last = free;
    try (InputStream wire = method.streamResponse(message)) {
      // Room for the whole message up front: protobuf then encodes straight into the buffer.
      if (wire.available() > last.length) {
        last = new byte[Math.max(wire.available(), 2 * last.length)];
      }
      int length = 0;
      while (true) {
        if (length == last.length) {
          last = Arrays.copyOf(last, 2 * last.length);
        }
        int read = wire.read(last, length, last.length - length);
        if (read < 0) {
          break;
        }
        length += read;
      }
      lastLength = length;
      bytesWritten += length;
      responses++;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close(Status status, Metadata trailers) {
    closedWith = status;
  }

  @Override
  public boolean isCancelled() {
    return false;
  }

  @Override
  public boolean isReady() {
    return true;
  }

  @Override
  public Attributes getAttributes() {
    return attributes;
  }

  @Override
  public MethodDescriptor<Q, Object> getMethodDescriptor() {
    return method;
  }

  long responses() {
    return responses;
  }

  long bytesWritten() {
    return bytesWritten;
  }

  /** The status the proxy closed the call with; null while it is open. */
  Status closedWith() {
    return closedWith;
  }

  /** How many more requests the proxy has asked for. */
  int requested() {
    return requested;
  }

  /** A copy of the last response's bytes, as they would go on the wire. */
  byte[] lastResponse() {
    return Arrays.copyOf(last, lastLength);
  }

  /** A copy of the bytes of the response before the last one. */
  byte[] responseBeforeLast() {
    return Arrays.copyOf(previous, previousLength);
  }

  /**
   * The top-level length-delimited field {@code number} of the last response (a string such as its
   * nonce), empty if it has none; read without decoding the rest, as a client's ACK needs no more.
   */
  ByteString lastResponseField(int number) {
    CodedInputStream in = CodedInputStream.newInstance(last, 0, lastLength);
    try {
      for (int tag = in.readTag(); tag != 0; tag = in.readTag()) {
        if (WireFormat.getTagFieldNumber(tag) == number
            && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
          return in.readBytes();
        }
        in.skipField(tag);
      }
      return ByteString.EMPTY;
    } catch (IOException e) {
      throw new UncheckedIOException("the proxy wrote a response that is not protobuf", e);
    }
  }

  /**
   * Whether the last response's bytes hold {@code encoded} somewhere: a cheap check, with no
   * decoding.
   */
  boolean lastResponseHolds(byte[] encoded) {
    return holds(last, lastLength, encoded);
  }

  /** Whether the bytes of the response before the last one hold {@code encoded} somewhere. */
  boolean responseBeforeLastHolds(byte[] encoded) {
    return holds(previous, previousLength, encoded);
  }

  private static boolean holds(byte[] response, int length, byte[] encoded) {
    outer:
    for (int start = 0; start + encoded.length <= length; start++) {
      for (int i = 0; i < encoded.length; i++) {
        if (response[start + i] != encoded[i]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }
}
