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
 * <p>A resource is compared by its encoding with the round's expected encoding: the proxy passes
 * the control plane's encoding through, and protobuf encodes an {@code Any} one way (its two fields
 * in order, once each), so the bytes are equal where {@link Any#equals} is.
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

  /**
   * One round's changed resource as a server encodes it: the {@code Any} a client compares the
   * resources it is sent with, by bytes (the proxy passes the control plane's encoding through).
   */
  record Expected(byte[] encoded) {
    static Expected of(Any resource) {
      return new Expected(resource.toByteArray());
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

  /** The field {@link #next} passed: its tag, and where its value lies if length-delimited. */
  private int tag;

  private int fieldAt;
  private int fieldEnd;

  /** Where the varint {@link #varint} read ends. */
  private int varintEnd;

  private void read(InputStream stream) throws IOException {
    // gRPC's message streams know their length (io.grpc.KnownLength).
    int length = stream.available();
    if (bytes.length < length) {
      bytes = new byte[Math.max(length, bytes.length * 2)];
    }
    size = 0;
    for (int n; size < length && (n = stream.read(bytes, size, length - size)) > 0; ) {
      size += n;
    }
    if (size < length || stream.read() != -1) {
      throw malformed("a message of another length than its stream said");
    }
    index();
  }

  /** Notes where the version, type URL and nonce lie; the resources are scanned when asked. */
  private void index() {
    versionAt = versionEnd = typeUrlAt = typeUrlEnd = nonceAt = nonceEnd = 0;
    for (int at = 0; at < size; ) {
      at = next(at, size);
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

  /** Whether a SotW response's resources include {@code expected}, byte for byte. */
  boolean sotwCarries(Expected expected) {
    byte[] encoded = expected.encoded();
    for (int at = 0; at < size; ) {
      at = next(at, size);
      if (tag == (RESOURCES << 3 | LENGTH_DELIMITED)
          && Arrays.equals(bytes, fieldAt, fieldEnd, encoded, 0, encoded.length)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether a Delta response's resources include one named {@code name} (UTF-8) whose resource is
   * {@code expected}, byte for byte.
   */
  boolean deltaCarries(byte[] name, Expected expected) {
    for (int at = 0; at < size; ) {
      at = next(at, size);
      if (tag == (RESOURCES << 3 | LENGTH_DELIMITED)
          && resourceEquals(fieldAt, fieldEnd, name, expected.encoded())) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether the {@code Resource} in {@code [from, to)} is named {@code name} and is {@code any}.
   */
  private boolean resourceEquals(int from, int to, byte[] name, byte[] any) {
    int nameAt = 0;
    int nameEnd = 0;
    int anyAt = 0;
    int anyEnd = 0;
    for (int at = from; at < to; ) {
      at = next(at, to);
      if (tag == (Resource.NAME_FIELD_NUMBER << 3 | LENGTH_DELIMITED)) {
        nameAt = fieldAt;
        nameEnd = fieldEnd;
      } else if (tag == (Resource.RESOURCE_FIELD_NUMBER << 3 | LENGTH_DELIMITED)) {
        anyAt = fieldAt;
        anyEnd = fieldEnd;
      }
    }
    return Arrays.equals(bytes, nameAt, nameEnd, name, 0, name.length)
        && Arrays.equals(bytes, anyAt, anyEnd, any, 0, any.length);
  }

  /**
   * Passes the field at {@code at}, of a message that ends at {@code end}: notes its {@link #tag}
   * and, if length-delimited, where its value lies ({@link #fieldAt}, {@link #fieldEnd}); returns
   * where the next field begins.
   */
  private int next(int at, int end) {
    tag = (int) varint(at);
    at = varintEnd;
    int next =
        switch (tag & 7) {
          case 0 -> {
            varint(at);
            yield varintEnd;
          }
          case 1 -> at + 8;
          case LENGTH_DELIMITED -> {
            long length = varint(at);
            fieldAt = varintEnd;
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

  /** The varint at {@code at}; {@link #varintEnd} is where it ends. */
  private long varint(int at) {
    long value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= size) {
        throw malformed("a varint past the end");
      }
      byte b = bytes[at++];
      value |= (long) (b & 0x7f) << shift;
      if (b >= 0) {
        varintEnd = at;
        return value;
      }
    }
    throw malformed("a varint longer than 10 bytes");
  }

  private static IllegalArgumentException malformed(String what) {
    return new IllegalArgumentException("malformed xDS response: " + what);
  }
}
