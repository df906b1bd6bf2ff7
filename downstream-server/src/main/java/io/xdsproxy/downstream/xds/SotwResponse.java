package io.xdsproxy.downstream.xds;

import com.google.protobuf.Any;
import com.google.protobuf.CodedOutputStream;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor.Marshaller;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.util.List;

/**
 * A SotW DiscoveryResponse on its way to the wire, with its resources already encoded: the
 * encoded resources of a response that many streams send alike (a group's whole state of a type,
 * to every wildcard subscriber) are made once and shared, and each stream adds only its own small
 * fields ("serialize once, write many"). Written as the DiscoveryResponse it stands for.
 *
 * @param resources field 2 ({@code resources}) of the response, encoded: a run of tagged {@code Any}s
 */
record SotwResponse(String versionInfo, String typeUrl, String nonce, byte[] resources) {

  /** The resources encoded as DiscoveryResponse field 2 carries them, in order. */
  static byte[] encode(List<Any> resources) {
    int size = 0;
    for (Any resource : resources) {
      size += CodedOutputStream.computeMessageSize(DiscoveryResponse.RESOURCES_FIELD_NUMBER, resource);
    }
    byte[] bytes = new byte[size];
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    try {
      for (Any resource : resources) {
        out.writeMessage(DiscoveryResponse.RESOURCES_FIELD_NUMBER, resource);
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
      writeUnlessEmpty(out, DiscoveryResponse.VERSION_INFO_FIELD_NUMBER, versionInfo);
      writeUnlessEmpty(out, DiscoveryResponse.TYPE_URL_FIELD_NUMBER, typeUrl);
      writeUnlessEmpty(out, DiscoveryResponse.NONCE_FIELD_NUMBER, nonce);
    } catch (IOException e) {
      throw new IllegalStateException("encoding into an array of its exact size", e);
    }
    return bytes;
  }

  private int headSize() {
    return sizeUnlessEmpty(DiscoveryResponse.VERSION_INFO_FIELD_NUMBER, versionInfo)
        + sizeUnlessEmpty(DiscoveryResponse.TYPE_URL_FIELD_NUMBER, typeUrl)
        + sizeUnlessEmpty(DiscoveryResponse.NONCE_FIELD_NUMBER, nonce);
  }

  private static int sizeUnlessEmpty(int field, String value) {
    return value.isEmpty() ? 0 : CodedOutputStream.computeStringSize(field, value);
  }

  private static void writeUnlessEmpty(CodedOutputStream out, int field, String value) throws IOException {
    if (!value.isEmpty()) {
      out.writeString(field, value);
    }
  }

  /** The encoded size of the whole response. */
  int size() {
    return headSize() + resources.length;
  }

  /** The response as a message, decoded from what would be written. */
  DiscoveryResponse toMessage() {
    try (InputStream encoded = MARSHALLER.stream(this)) {
      return DiscoveryResponse.parseFrom(encoded);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static final Marshaller<SotwResponse> MARSHALLER = new Marshaller<>() {
    @Override
    public InputStream stream(SotwResponse response) {
      // Fields in any order make the same message; the shared bytes are read, not copied, here.
      return new Encoded(response.head(), response.resources());
    }

    @Override
    public SotwResponse parse(InputStream stream) {
      try {
        DiscoveryResponse response = DiscoveryResponse.parseFrom(stream);
        return new SotwResponse(response.getVersionInfo(), response.getTypeUrl(), response.getNonce(),
            encode(response.getResourcesList()));
      } catch (IOException e) {
        throw Status.INTERNAL.withDescription("Invalid protobuf byte sequence").withCause(e).asRuntimeException();
      }
    }
  };

  /** The two parts, read one after the other, with their length known so gRPC sizes the frame at once. */
  private static final class Encoded extends SequenceInputStream implements KnownLength {
    private int left;

    Encoded(byte[] head, byte[] resources) {
      super(new ByteArrayInputStream(head), new ByteArrayInputStream(resources));
      this.left = head.length + resources.length;
    }

    @Override
    public int available() {
      return left;
    }

    @Override
    public int read() throws IOException {
      int read = super.read();
      if (read >= 0) {
        left--;
      }
      return read;
    }

    @Override
    public int read(byte[] buffer, int offset, int length) throws IOException {
      int read = super.read(buffer, offset, length);
      if (read > 0) {
        left -= read;
      }
      return read;
    }
  }
}
