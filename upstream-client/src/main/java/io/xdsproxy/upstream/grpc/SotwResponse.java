package io.xdsproxy.upstream.grpc;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.WireFormat;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor.Marshaller;
import io.grpc.Status;
import io.xdsproxy.core.EncodedBodies;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * A SotW DiscoveryResponse from the control plane as it arrived: its header fields read, its
 * resources left as the bytes they came in. A SotW control plane resends every resource of a type
 * with each change, to every node group; with the bytes at hand a session tells a resource it
 * already holds by comparing them with what it held at that place, and parses only the ones that
 * changed, where the generated parser built every one of them ({@code Any}, its type URL and its
 * value) for the comparison to throw away.
 *
 * <p>The fields read are those a session reads: version_info, type_url, nonce. The others (canary,
 * control_plane, any a later API adds) are skipped, as an unknown field is.
 */
final class SotwResponse {

  private static final int VERSION_INFO = tag(DiscoveryResponse.VERSION_INFO_FIELD_NUMBER);
  private static final int RESOURCES = tag(DiscoveryResponse.RESOURCES_FIELD_NUMBER);
  private static final int TYPE_URL = tag(DiscoveryResponse.TYPE_URL_FIELD_NUMBER);
  private static final int NONCE = tag(DiscoveryResponse.NONCE_FIELD_NUMBER);

  /** Reads a response of the SotW ADS method in place of the generated message. */
  static final Marshaller<SotwResponse> MARSHALLER =
      new Marshaller<>() {
        @Override
        public InputStream stream(SotwResponse response) {
          return new ByteArrayInputStream(response.bytes);
        }

        @Override
        public SotwResponse parse(InputStream stream) {
          try {
            return read(readAll(stream));
          } catch (IOException e) {
            throw Status.INTERNAL
                .withDescription("Invalid protobuf byte sequence")
                .withCause(e)
                .asRuntimeException();
          }
        }
      };

  private final byte[] bytes;
  private final String versionInfo;
  private final String typeUrl;
  private final String nonce;
  private final EncodedBodies resources;

  private SotwResponse(
      byte[] bytes, String versionInfo, String typeUrl, String nonce, EncodedBodies resources) {
    this.bytes = bytes;
    this.versionInfo = versionInfo;
    this.typeUrl = typeUrl;
    this.nonce = nonce;
    this.resources = resources;
  }

  /** The response that {@code bytes} encode; they are kept, not copied. */
  static SotwResponse read(byte[] bytes) throws IOException {
    String versionInfo = "";
    String typeUrl = "";
    String nonce = "";
    EncodedBodies.Builder resources = EncodedBodies.in(bytes);
    CodedInputStream input = CodedInputStream.newInstance(bytes);
    for (int tag = input.readTag(); tag != 0; tag = input.readTag()) {
      if (tag == VERSION_INFO) {
        versionInfo = input.readStringRequireUtf8();
      } else if (tag == TYPE_URL) {
        typeUrl = input.readStringRequireUtf8();
      } else if (tag == NONCE) {
        nonce = input.readStringRequireUtf8();
      } else if (tag == RESOURCES) {
        int length = input.readRawVarint32();
        resources.add(input.getTotalBytesRead(), length);
        input.skipRawBytes(length);
      } else if (!input.skipField(tag)) {
        break; // an end-group tag at the top level: what the generated parser stops at too
      }
    }
    return new SotwResponse(bytes, versionInfo, typeUrl, nonce, resources.build());
  }

  /** The response as the generated message encodes it (tests, and the peers' models). */
  static SotwResponse of(DiscoveryResponse response) {
    try {
      return read(response.toByteArray());
    } catch (IOException e) {
      throw new IllegalStateException("a message's own encoding reads back", e);
    }
  }

  private static byte[] readAll(InputStream stream) throws IOException {
    if (stream instanceof KnownLength) {
      // Into one array of the stated size: readNBytes(int) reads in 8 KiB chunks and copies them
      // into its result, two allocations and two copies of every response, a fifth of a group's
      // CPU for a SotW update at 1,000 groups (bench/RESULTS.md, issue 30 round four).
      int size = stream.available();
      byte[] bytes = new byte[size];
      if (stream.readNBytes(bytes, 0, size) == size && stream.read() == -1) {
        return bytes;
      }
      throw new IOException("a message shorter or longer than its stated " + size + " bytes");
    }
    return stream.readAllBytes();
  }

  private static int tag(int field) {
    return (field << 3) | WireFormat.WIRETYPE_LENGTH_DELIMITED;
  }

  String getVersionInfo() {
    return versionInfo;
  }

  String getTypeUrl() {
    return typeUrl;
  }

  String getNonce() {
    return nonce;
  }

  /** Its resources, each the bytes of one {@code Any}. */
  EncodedBodies resources() {
    return resources;
  }
}
