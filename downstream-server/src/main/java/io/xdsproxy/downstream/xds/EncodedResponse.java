package io.xdsproxy.downstream.xds;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.MessageLite;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor.Marshaller;
import io.grpc.Status;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.Objects;

/**
 * A DiscoveryResponse or DeltaDiscoveryResponse on its way to the wire, its body (resources, and a
 * Delta response's removals) already encoded: a body that many streams send alike (a group's whole
 * state of a type to every wildcard subscriber; one change to every stream that held the state
 * before it) is encoded once and shared, and each stream adds only its own small fields ("serialize
 * once, write many"). Written as the message it stands for.
 *
 * <p>The two messages number their small fields alike: version ({@code version_info}, {@code
 * system_version_info}) 1, {@code type_url} 4, {@code nonce} 5.
 *
 * @param body the encoded fields of the response other than those three
 */
record EncodedResponse(String version, String typeUrl, String nonce, byte[] body) {

  private static final int VERSION = DiscoveryResponse.VERSION_INFO_FIELD_NUMBER;
  private static final int TYPE_URL = DiscoveryResponse.TYPE_URL_FIELD_NUMBER;
  private static final int NONCE = DiscoveryResponse.NONCE_FIELD_NUMBER;

  static {
    if (DeltaDiscoveryResponse.SYSTEM_VERSION_INFO_FIELD_NUMBER != VERSION
        || DeltaDiscoveryResponse.TYPE_URL_FIELD_NUMBER != TYPE_URL
        || DeltaDiscoveryResponse.NONCE_FIELD_NUMBER != NONCE) {
      throw new AssertionError(
          "DiscoveryResponse and DeltaDiscoveryResponse number their fields differently");
    }
  }

  /** A SotW response's resources ({@code Any}s), encoded as field 2 carries them, in order. */
  static byte[] sotwBody(List<? extends MessageLite> resources) {
    return body(resources, List.of());
  }

  /**
   * A Delta response's resources ({@code Resource}s, field 2) and removed names (field 6), encoded.
   */
  static byte[] deltaBody(List<? extends MessageLite> resources, List<String> removed) {
    return body(resources, removed);
  }

  private static byte[] body(List<? extends MessageLite> resources, List<String> removed) {
    int size = 0;
    for (MessageLite resource : resources) {
      size +=
          CodedOutputStream.computeMessageSize(DiscoveryResponse.RESOURCES_FIELD_NUMBER, resource);
    }
    for (String name : removed) {
      size +=
          CodedOutputStream.computeStringSize(
              DeltaDiscoveryResponse.REMOVED_RESOURCES_FIELD_NUMBER, name);
    }
    byte[] bytes = new byte[size];
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    try {
      for (MessageLite resource : resources) {
        out.writeMessage(DiscoveryResponse.RESOURCES_FIELD_NUMBER, resource);
      }
      for (String name : removed) {
        out.writeString(DeltaDiscoveryResponse.REMOVED_RESOURCES_FIELD_NUMBER, name);
      }
      out.checkNoSpaceLeft();
    } catch (IOException e) {
      throw new IllegalStateException("encoding into an array of its exact size", e);
    }
    return bytes;
  }

  /** This stream's own fields, encoded; empty strings are left out, as proto3 leaves them out. */
  private byte[] head() {
    byte[] bytes = new byte[headSize()];
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    try {
      writeUnlessEmpty(out, VERSION, version);
      writeUnlessEmpty(out, TYPE_URL, typeUrl);
      writeUnlessEmpty(out, NONCE, nonce);
    } catch (IOException e) {
      throw new IllegalStateException("encoding into an array of its exact size", e);
    }
    return bytes;
  }

  private int headSize() {
    return sizeUnlessEmpty(VERSION, version)
        + sizeUnlessEmpty(TYPE_URL, typeUrl)
        + sizeUnlessEmpty(NONCE, nonce);
  }

  private static int sizeUnlessEmpty(int field, String value) {
    return value.isEmpty() ? 0 : CodedOutputStream.computeStringSize(field, value);
  }

  private static void writeUnlessEmpty(CodedOutputStream out, int field, String value)
      throws IOException {
    if (!value.isEmpty()) {
      out.writeString(field, value);
    }
  }

  /** The encoded size of the whole response. */
  int size() {
    return headSize() + body.length;
  }

  /** The response as a SotW message, decoded from what would be written. */
  DiscoveryResponse toSotw() {
    try (InputStream encoded = written()) {
      return DiscoveryResponse.parseFrom(encoded);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The response as a Delta message, decoded from what would be written. */
  DeltaDiscoveryResponse toDelta() {
    try (InputStream encoded = written()) {
      return DeltaDiscoveryResponse.parseFrom(encoded);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * What is written: fields in any order make the same message; the shared bytes are read, not
   * copied, here.
   */
  private InputStream written() {
    return new Encoded(head(), body);
  }

  /** Writes SotW responses; reads them (as a client would) into their encoded form. */
  static final Marshaller<EncodedResponse> SOTW =
      marshaller(
          stream -> {
            DiscoveryResponse response = DiscoveryResponse.parseFrom(stream);
            return new EncodedResponse(
                response.getVersionInfo(),
                response.getTypeUrl(),
                response.getNonce(),
                sotwBody(response.getResourcesList()));
          });

  /**
   * Writes Delta responses; reads them (as a client would) into their encoded form, which keeps no
   * field the proxy does not send ({@code control_plane}, {@code removed_resource_names}).
   */
  static final Marshaller<EncodedResponse> DELTA =
      marshaller(
          stream -> {
            DeltaDiscoveryResponse response = DeltaDiscoveryResponse.parseFrom(stream);
            return new EncodedResponse(
                response.getSystemVersionInfo(),
                response.getTypeUrl(),
                response.getNonce(),
                deltaBody(response.getResourcesList(), response.getRemovedResourcesList()));
          });

  /** How one of the two messages is read into its encoded form. */
  @FunctionalInterface
  private interface Reader {
    EncodedResponse read(InputStream stream) throws IOException;
  }

  private static Marshaller<EncodedResponse> marshaller(Reader reader) {
    return new Marshaller<>() {
      @Override
      public InputStream stream(EncodedResponse response) {
        return response.written();
      }

      @Override
      public EncodedResponse parse(InputStream stream) {
        try {
          return reader.read(stream);
        } catch (IOException e) {
          throw invalid(e);
        }
      }
    };
  }

  private static RuntimeException invalid(IOException e) {
    return Status.INTERNAL
        .withDescription("Invalid protobuf byte sequence")
        .withCause(e)
        .asRuntimeException();
  }

  /**
   * The two parts, read one after the other, with their length known so gRPC sizes the frame at
   * once, and drained into gRPC's frame as they are: a stream gRPC cannot drain it copies through a
   * buffer of 8 KiB it allocates for each message (Guava's {@code ByteStreams.copy}), which on a
   * fan-out to thousands of streams was most of what a response allocated.
   */
  private static final class Encoded extends InputStream implements KnownLength, Drainable {
    private final byte[] head;
    private final byte[] body;

    /** How much of the two has been read, head first. */
    private int read;

    Encoded(byte[] head, byte[] body) {
      this.head = head;
      this.body = body;
    }

    @Override
    public int available() {
      return head.length + body.length - read;
    }

    @Override
    public int read() {
      if (read < head.length) {
        return head[read++] & 0xff;
      }
      if (read < head.length + body.length) {
        return body[read++ - head.length] & 0xff;
      }
      return -1;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) {
      Objects.checkFromIndexSize(offset, length, buffer.length);
      if (length == 0) {
        return 0;
      }
      if (available() == 0) {
        return -1;
      }
      int copied = 0;
      if (read < head.length) {
        int part = Math.min(length, head.length - read);
        System.arraycopy(head, read, buffer, offset, part);
        copied = part;
        read += part;
      }
      if (copied < length && read >= head.length) {
        int part = Math.min(length - copied, head.length + body.length - read);
        System.arraycopy(body, read - head.length, buffer, offset + copied, part);
        copied += part;
        read += part;
      }
      return copied;
    }

    @Override
    public int drainTo(OutputStream target) throws IOException {
      int drained = available();
      if (read < head.length) {
        target.write(head, read, head.length - read);
        read = head.length;
      }
      target.write(body, read - head.length, body.length - (read - head.length));
      read = head.length + body.length;
      return drained;
    }
  }
}
