package io.xdsproxy.downstream.xds;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.MethodDescriptor.Marshaller;
import io.grpc.Status;
import io.grpc.protobuf.ProtoUtils;
import io.xdsproxy.core.Subscription;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.List;

/**
 * Reads SotW requests without decoding, on every ACK, the names a client already sent. Envoy
 * repeats every resource name it wants in each request, ACKs included: thousands of names, the same
 * bytes each time, and the same bytes for every client of a group. The encoded names are looked up
 * in a bounded cache of name lists already decoded (and shared, as {@link Subscription} shares
 * them); only a list not seen before is decoded. Responses are written as usual.
 */
final class SotwRequestMarshaller implements Marshaller<DiscoveryRequest> {

  /** A request with fewer names is parsed as usual: not worth the lookup. */
  private static final int FEW_NAMES = 16;
  private static final int RESOURCE_NAMES = DiscoveryRequest.RESOURCE_NAMES_FIELD_NUMBER;

  private final Marshaller<DiscoveryRequest> plain = ProtoUtils.marshaller(DiscoveryRequest.getDefaultInstance());
  /**
   * Encoded resource_names to a request holding just those names, decoded; bounded by encoded size,
   * so no client can grow it without end. A request is made from it with {@code toBuilder()}, which
   * shares its list of names rather than copying it.
   */
  private final Cache<ByteString, DiscoveryRequest> decoded = Caffeine.newBuilder()
      .maximumWeight(32L * 1024 * 1024)
      .<ByteString, DiscoveryRequest>weigher((encoded, names) -> encoded.size())
      .expireAfterAccess(Duration.ofMinutes(10))
      .build();

  @Override
  public InputStream stream(DiscoveryRequest value) {
    return plain.stream(value);
  }

  @Override
  public DiscoveryRequest parse(InputStream stream) {
    try {
      return parse(stream.readAllBytes());
    } catch (IOException e) {
      throw Status.INTERNAL.withDescription("Invalid protobuf byte sequence: " + e.getMessage()).withCause(e)
          .asRuntimeException();
    }
  }

  DiscoveryRequest parse(byte[] bytes) throws InvalidProtocolBufferException {
    // Where the names are: one run of resource_names fields, as every encoder writes them.
    int start = -1;
    int end = -1;
    int count = 0;
    boolean oneRun = true;
    CodedInputStream in = CodedInputStream.newInstance(bytes);
    try {
      while (true) {
        int at = in.getTotalBytesRead();
        int tag = in.readTag();
        if (tag == 0) {
          break;
        }
        in.skipField(tag);
        if (WireFormat.getTagFieldNumber(tag) == RESOURCE_NAMES
            && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
          oneRun &= start < 0 || at == end;
          start = start < 0 ? at : start;
          end = in.getTotalBytesRead();
          count++;
        }
      }
    } catch (IOException garbage) {
      return DiscoveryRequest.parseFrom(bytes); // says what is wrong with it, as the plain parser would
    }
    if (count < FEW_NAMES || !oneRun) {
      return DiscoveryRequest.parseFrom(bytes);
    }
    ByteString encodedNames = ByteString.copyFrom(bytes, start, end - start);
    DiscoveryRequest names = decoded.getIfPresent(encodedNames);
    if (names == null) {
      List<String> shared = Subscription.sharedList(DiscoveryRequest.parseFrom(encodedNames).getResourceNamesList());
      names = DiscoveryRequest.newBuilder().addAllResourceNames(shared).build();
      decoded.put(encodedNames, names);
    }
    return names.toBuilder()
        .mergeFrom(bytes, 0, start)
        .mergeFrom(bytes, end, bytes.length - end)
        .build();
  }
}
