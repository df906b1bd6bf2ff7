package io.xdsproxy.bench;

import com.google.protobuf.Any;
import com.google.protobuf.CodedOutputStream;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.MethodDescriptor.Marshaller;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;

/**
 * A DiscoveryResponse or DeltaDiscoveryResponse as a simulated client reads it: its bytes, where
 * its version, type URL and nonce lie in them, and a scan of its resources for one resource's
 * expected encoding. Nothing is decoded into objects: the load generator runs on the same cores as
 * the server it measures, and a client that decodes the whole CDS state (1,000 clusters) of every
 * response it is sent takes as much CPU as the proxy that sent it.
 *
 * <p>One reader per thread, refilled by {@link #MARSHALLER} with each response: gRPC parses a
 * message and hands it to the observer in one task, on one thread, so a response is read in full
 * before the next is parsed (grpc-java's {@code ClientCallImpl}, {@code
 * ClientStreamListenerImpl.messagesAvailable}). An observer must not keep it past {@code onNext}.
 *
 * <p>The two messages number the fields read here alike: version ({@code version_info}, {@code
 * system_version_info}) 1, resources 2, {@code type_url} 4, {@code nonce} 5. Fields may come in any
 * order (the proxy writes its own fields before the shared, pre-encoded resources).
 */
final class ReceivedResponse {

  private static final int VERSION = DiscoveryResponse.VERSION_INFO_FIELD_NUMBER;
  private static final int RESOURCES = DiscoveryResponse.RESOURCES_FIELD_NUMBER;
  private static final int TYPE_URL = DiscoveryResponse.TYPE_URL_FIELD_NUMBER;
  private static final int NONCE = DiscoveryResponse.NONCE_FIELD_NUMBER;

  static {
    if (DeltaDiscoveryResponse.SYSTEM_VERSION_INFO_FIELD_NUMBER != VERSION
        || DeltaDiscoveryResponse.RESOURCES_FIELD_NUMBER != RESOURCES
        || DeltaDiscoveryResponse.TYPE_URL_FIELD_NUMBER != TYPE_URL
        || DeltaDiscoveryResponse.NONCE_FIELD_NUMBER != NONCE) {
      throw new AssertionError(
          "DiscoveryResponse and DeltaDiscoveryResponse number their fields differently");
    }
  }

  private static final int LENGTH_DELIMITED = 2;

  private static final ThreadLocal<ReceivedResponse> READER =
      ThreadLocal.withInitial(ReceivedResponse::new);

  /** Reads each response into this thread's reader; the request side is {@link EncodedRequest}. */
  static final Marshaller<ReceivedResponse> MARSHALLER =
      new Marshaller<>() {
        @Override
        public InputStream stream(ReceivedResponse response) {
          throw new UnsupportedOperationException("the clients only receive responses");
        }

        @Override
        public ReceivedResponse parse(InputStream stream) {
          ReceivedResponse reader = READER.get();
          try {
            reader.read(stream);
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
          return reader;
        }
      };

  /** One round's changed resource: what a client compares a received resource with. */
  record Expected(byte[] typeUrl, byte[] value) {
    static Expected of(Any resource) {
      return new Expected(
          resource.getTypeUrlBytes().toByteArray(), resource.getValue().toByteArray());
    }
  }

  /** The response's bytes in {@code [0, size)}, grown for the largest one this thread has read. */
  private byte[] bytes = new byte[4096];

  private int size;
  private int versionAt;
  private int versionEnd;
  private int typeUrlAt;
  private int typeUrlEnd;
  private int nonceAt;
  private int nonceEnd;

  /** Where a field's value lies, set by {@link #next}. */
  private int fieldAt;

  private int fieldEnd;

  private void read(InputStream stream) throws IOException {
    // gRPC's message streams know their length (io.grpc.KnownLength).
    int length = stream.available();
    if (bytes.length < length) {
      bytes = new byte[Math.max(length, bytes.length * 2)];
    }
    size = 0;
    for (int n; (n = stream.read(bytes, size, bytes.length - size)) > 0; ) {
      size += n;
      if (size == bytes.length) {
        bytes = Arrays.copyOf(bytes, bytes.length * 2);
      }
    }
    index();
  }

  /** Notes where the version, type URL and nonce lie; the resources are scanned when asked. */
  private void index() {
    versionAt = versionEnd = typeUrlAt = typeUrlEnd = nonceAt = nonceEnd = 0;
    for (int at = 0; at < size; ) {
      int tag = (int) varint(at);
      at = skip(tag, varintEnd(at), size);
      switch (tag) {
        case VERSION << 3 | LENGTH_DELIMITED -> {
          versionAt = fieldAt;
          versionEnd = fieldEnd;
        }
        case TYPE_URL << 3 | LENGTH_DELIMITED -> {
          typeUrlAt = fieldAt;
          typeUrlEnd = fieldEnd;
        }
        case NONCE << 3 | LENGTH_DELIMITED -> {
          nonceAt = fieldAt;
          nonceEnd = fieldEnd;
        }
        default -> {}
      }
    }
  }

  /** The encoded size of the whole response. */
  int size() {
    return size;
  }

  /** Whether the type URL is {@code typeUrl} (UTF-8). */
  boolean typeIs(byte[] typeUrl) {
    return Arrays.equals(bytes, typeUrlAt, typeUrlEnd, typeUrl, 0, typeUrl.length);
  }

  /** The fields of a response an ACK repeats. */
  enum Part {
    VERSION,
    TYPE_URL,
    NONCE
  }

  /**
   * {@code part} encoded as string field {@code number} of a request, as protobuf encodes it (left
   * out when empty, as proto3 leaves it out).
   */
  byte[] encode(int number, Part part) {
    return encode(number, part, 0, null);
  }

  /** Two parts, encoded one after the other as {@link #encode(int, Part)} encodes one. */
  byte[] encode(int number, Part part, int secondNumber, Part second) {
    int size = encodedSize(number, part) + (second == null ? 0 : encodedSize(secondNumber, second));
    byte[] encoded = new byte[size];
    CodedOutputStream out = CodedOutputStream.newInstance(encoded);
    try {
      write(out, number, part);
      if (second != null) {
        write(out, secondNumber, second);
      }
      out.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("encoding into an array of its exact size", e);
    }
    return encoded;
  }

  private int encodedSize(int number, Part part) {
    int length = end(part) - at(part);
    return length == 0
        ? 0
        : CodedOutputStream.computeTagSize(number)
            + CodedOutputStream.computeUInt32SizeNoTag(length)
            + length;
  }

  private void write(CodedOutputStream out, int number, Part part) throws IOException {
    int length = end(part) - at(part);
    if (length > 0) {
      out.writeByteArray(number, bytes, at(part), length);
    }
  }

  private int at(Part part) {
    return switch (part) {
      case VERSION -> versionAt;
      case TYPE_URL -> typeUrlAt;
      case NONCE -> nonceAt;
    };
  }

  private int end(Part part) {
    return switch (part) {
      case VERSION -> versionEnd;
      case TYPE_URL -> typeUrlEnd;
      case NONCE -> nonceEnd;
    };
  }

  /**
   * Whether a SotW response's resources include {@code expected}, equal as {@link Any#equals} has
   * it: the same type URL and the same value bytes.
   */
  boolean sotwCarries(Expected expected) {
    for (int at = 0; at < size; ) {
      int tag = (int) varint(at);
      at = skip(tag, varintEnd(at), size);
      if (tag == (RESOURCES << 3 | LENGTH_DELIMITED) && anyEquals(fieldAt, fieldEnd, expected)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether a Delta response's resources include one named {@code name} (UTF-8) whose resource is
   * {@code expected}.
   */
  boolean deltaCarries(byte[] name, Expected expected) {
    for (int at = 0; at < size; ) {
      int tag = (int) varint(at);
      at = skip(tag, varintEnd(at), size);
      if (tag == (RESOURCES << 3 | LENGTH_DELIMITED)
          && resourceEquals(fieldAt, fieldEnd, name, expected)) {
        return true;
      }
    }
    return false;
  }

  /** Whether the {@code Resource} in {@code [from, to)} is {@code name} and {@code expected}. */
  private boolean resourceEquals(int from, int to, byte[] name, Expected expected) {
    int nameAt = 0;
    int nameEnd = 0;
    int anyAt = 0;
    int anyEnd = 0;
    for (int at = from; at < to; ) {
      int tag = (int) varint(at);
      at = skip(tag, varintEnd(at), to);
      if (tag == (Resource.NAME_FIELD_NUMBER << 3 | LENGTH_DELIMITED)) {
        nameAt = fieldAt;
        nameEnd = fieldEnd;
      } else if (tag == (Resource.RESOURCE_FIELD_NUMBER << 3 | LENGTH_DELIMITED)) {
        anyAt = fieldAt;
        anyEnd = fieldEnd;
      }
    }
    return Arrays.equals(bytes, nameAt, nameEnd, name, 0, name.length)
        && anyEquals(anyAt, anyEnd, expected);
  }

  /** Whether the {@code Any} in {@code [from, to)} has {@code expected}'s type URL and value. */
  private boolean anyEquals(int from, int to, Expected expected) {
    int typeAt = 0;
    int typeEnd = 0;
    int valueAt = 0;
    int valueEnd = 0;
    for (int at = from; at < to; ) {
      int tag = (int) varint(at);
      at = skip(tag, varintEnd(at), to);
      if (tag == (Any.TYPE_URL_FIELD_NUMBER << 3 | LENGTH_DELIMITED)) {
        typeAt = fieldAt;
        typeEnd = fieldEnd;
      } else if (tag == (Any.VALUE_FIELD_NUMBER << 3 | LENGTH_DELIMITED)) {
        valueAt = fieldAt;
        valueEnd = fieldEnd;
      } else {
        return false; // a field Any does not have: unequal, as its unknown fields would be
      }
    }
    // The value first: it differs early (the resource's name comes first) where types are alike.
    byte[] value = expected.value();
    byte[] type = expected.typeUrl();
    return Arrays.equals(bytes, valueAt, valueEnd, value, 0, value.length)
        && Arrays.equals(bytes, typeAt, typeEnd, type, 0, type.length);
  }

  /**
   * Passes the value of the field whose tag ends at {@code at}, noting where a length-delimited
   * value lies in {@link #fieldAt} and {@link #fieldEnd}; returns where the next field begins.
   */
  private int skip(int tag, int at, int end) {
    int next =
        switch (tag & 7) {
          case 0 -> varintEnd(at);
          case 1 -> at + 8;
          case LENGTH_DELIMITED -> {
            long length = varint(at);
            fieldAt = varintEnd(at);
            fieldEnd = (int) Math.min(Integer.MAX_VALUE, fieldAt + length);
            yield fieldEnd;
          }
          case 5 -> at + 4;
          default -> throw malformed("wire type " + (tag & 7));
        };
    if (next > end || next < at) {
      throw malformed("a field past the end of its message");
    }
    return next;
  }

  private long varint(int at) {
    long value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= size) {
        throw malformed("a varint past the end");
      }
      byte b = bytes[at++];
      value |= (long) (b & 0x7f) << shift;
      if (b >= 0) {
        return value;
      }
    }
    throw malformed("a varint longer than 10 bytes");
  }

  private int varintEnd(int at) {
    while (at < size && bytes[at] < 0) {
      at++;
    }
    return at + 1;
  }

  private static IllegalArgumentException malformed(String what) {
    return new IllegalArgumentException("malformed xDS response: " + what);
  }
}
