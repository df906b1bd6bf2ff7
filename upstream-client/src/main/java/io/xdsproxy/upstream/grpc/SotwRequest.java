package io.xdsproxy.upstream.grpc;

import com.github.benmanes.caffeine.cache.Interner;
import com.google.protobuf.ByteString;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.Drainable;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor.Marshaller;
import io.grpc.Status;
import io.xdsproxy.core.TypeUrl;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;

/**
 * A SotW DiscoveryRequest as a group's session sends it, in four encoded parts laid end to end in
 * field order, so that the bytes are those protobuf writes for the same message: version_info; the
 * node; the resource names with the type URL; the response nonce with any error detail. A session
 * ACKs every response, and a group that asks for a thousand assignments sent the thousand names
 * again with each ACK, encoding each as UTF-8 every time (a fifth of a session's work where many
 * small groups share a control plane). The node is encoded once per session, the names once per
 * change of them, and groups that ask for the same names share one encoding of them.
 */
final class SotwRequest {

  /** Encoded names and type URLs, shared by every group that asks for the same ones. */
  private static final Interner<ByteString> ASKED = Interner.newWeakInterner();

  static final Marshaller<SotwRequest> MARSHALLER =
      new Marshaller<>() {
        @Override
        public InputStream stream(SotwRequest request) {
          return new Parts(request);
        }

        @Override
        public SotwRequest parse(InputStream stream) {
          try {
            DiscoveryRequest request = DiscoveryRequest.parseFrom(stream);
            return new SotwRequest(
                ByteString.EMPTY, ByteString.EMPTY, request.toByteString(), ByteString.EMPTY);
          } catch (IOException e) {
            throw Status.INTERNAL
                .withDescription("Invalid protobuf")
                .withCause(e)
                .asRuntimeException();
          }
        }
      };

  private final ByteString version;
  private final ByteString node;
  private final ByteString asked;
  private final ByteString answer;

  private SotwRequest(ByteString version, ByteString node, ByteString asked, ByteString answer) {
    this.version = version;
    this.node = node;
    this.asked = asked;
    this.answer = answer;
  }

  /** The encoded node field of {@code node}: once per session. */
  static ByteString node(Node node) {
    return DiscoveryRequest.newBuilder().setNode(node).build().toByteString();
  }

  /** The encoded resource names and type URL: once per change of what a type asks for. */
  static ByteString asked(TypeUrl type, List<String> names) {
    return ASKED.intern(
        DiscoveryRequest.newBuilder()
            .addAllResourceNames(names)
            .setTypeUrl(type.url())
            .build()
            .toByteString());
  }

  /**
   * A request of {@code version}, from {@code node} (as {@link #node} encoded it), for what {@code
   * asked} says, answering {@code nonce}, with {@code error} a NACK (null for an ACK).
   */
  static SotwRequest of(
      String version,
      ByteString node,
      ByteString asked,
      String nonce,
      com.google.rpc.Status error) {
    DiscoveryRequest.Builder answer = DiscoveryRequest.newBuilder().setResponseNonce(nonce);
    if (error != null) {
      answer.setErrorDetail(error);
    }
    return new SotwRequest(
        DiscoveryRequest.newBuilder().setVersionInfo(version).build().toByteString(),
        node,
        asked,
        answer.build().toByteString());
  }

  /** The request as the generated message (tests). */
  DiscoveryRequest toMessage() {
    try {
      return DiscoveryRequest.parseFrom(version.concat(node).concat(asked).concat(answer));
    } catch (IOException e) {
      throw new IllegalStateException("parts encoded by protobuf parse", e);
    }
  }

  /** The parts, read one after the other, their length known and drained as they are. */
  private static final class Parts extends InputStream implements KnownLength, Drainable {
    private ByteString remaining;

    Parts(SotwRequest request) {
      this.remaining =
          request.version.concat(request.node).concat(request.asked).concat(request.answer);
    }

    @Override
    public int available() {
      return remaining.size();
    }

    @Override
    public int read() {
      if (remaining.isEmpty()) {
        return -1;
      }
      int next = remaining.byteAt(0) & 0xff;
      remaining = remaining.substring(1);
      return next;
    }

    @Override
    public int read(byte[] into, int offset, int length) {
      if (remaining.isEmpty()) {
        return -1;
      }
      int n = Math.min(length, remaining.size());
      remaining.copyTo(into, 0, offset, n);
      remaining = remaining.substring(n);
      return n;
    }

    @Override
    public int drainTo(OutputStream target) throws IOException {
      int n = remaining.size();
      remaining.writeTo(target);
      remaining = ByteString.EMPTY;
      return n;
    }
  }
}
