package io.xdsproxy.downstream.xds;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import com.google.protobuf.WireFormat;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.KnownLength;
import io.grpc.MethodDescriptor.Marshaller;
import io.grpc.Status;
import io.grpc.protobuf.ProtoUtils;
import io.xdsproxy.core.Subscription;
import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * Reads requests without decoding names it decoded before, and gives requests with equal names one
 * list of them. Envoy repeats every resource name it wants in each SotW request, ACKs included:
 * thousands of names, the same bytes each time, and the same bytes for every client of a group; a
 * Delta client sends them once, in its first request of a type, the same bytes as every newcomer of
 * its group. The encoded names are looked up in a bounded cache of name lists already decoded (and
 * shared, as {@link Subscription} shares them); only a list not seen before is decoded, and {@link
 * Subscription} finds what it made of a list by the list's identity. Responses are written as
 * usual.
 *
 * @param <M> the request message: {@link #SOTW}'s names are its resource_names, {@link #DELTA}'s
 *     its resource_names_subscribe
 */
final class RequestMarshaller<M extends Message> implements Marshaller<M> {

  /** A request with fewer names is parsed as usual: not worth the lookup. */
  private static final int FEW_NAMES = 16;

  /** SotW requests, by their resource_names. */
  static final RequestMarshaller<DiscoveryRequest> SOTW = sotw();

  /** Delta requests, by their resource_names_subscribe. */
  static final RequestMarshaller<DeltaDiscoveryRequest> DELTA = delta();

  private final M empty;
  private final Parser<M> parser;
  private final int namesField;
  private final Function<M, List<String>> namesOf;
  private final Function<List<String>, M> holding;
  private final Marshaller<M> plain;

  /**
   * Encoded names to a request holding just those names, decoded; bounded by encoded size, so no
   * client can grow it without end. A request is made from it with {@code toBuilder()}, which
   * shares its list of names rather than copying it.
   */
  private final Cache<EncodedNames, M> decoded =
      Caffeine.newBuilder()
          .maximumWeight(32L * 1024 * 1024)
          .<EncodedNames, M>weigher((encoded, names) -> encoded.length)
          .expireAfterAccess(Duration.ofMinutes(10))
          .build();

  /**
   * @param namesField the number of the repeated string field read by its bytes
   * @param namesOf the names of that field in a request
   * @param holding a request holding nothing but these names in that field
   */
  private RequestMarshaller(
      M empty,
      int namesField,
      Function<M, List<String>> namesOf,
      Function<List<String>, M> holding) {
    this.empty = empty;
    @SuppressWarnings("unchecked")
    Parser<M> parser = (Parser<M>) empty.getParserForType();
    this.parser = parser;
    this.namesField = namesField;
    this.namesOf = namesOf;
    this.holding = holding;
    this.plain = ProtoUtils.marshaller(empty);
  }

  /** A marshaller of SotW requests of its own, with a cache of its own (for tests). */
  static RequestMarshaller<DiscoveryRequest> sotw() {
    return new RequestMarshaller<>(
        DiscoveryRequest.getDefaultInstance(),
        DiscoveryRequest.RESOURCE_NAMES_FIELD_NUMBER,
        DiscoveryRequest::getResourceNamesList,
        names -> DiscoveryRequest.newBuilder().addAllResourceNames(names).build());
  }

  /** A marshaller of Delta requests of its own, with a cache of its own (for tests). */
  static RequestMarshaller<DeltaDiscoveryRequest> delta() {
    return new RequestMarshaller<>(
        DeltaDiscoveryRequest.getDefaultInstance(),
        DeltaDiscoveryRequest.RESOURCE_NAMES_SUBSCRIBE_FIELD_NUMBER,
        DeltaDiscoveryRequest::getResourceNamesSubscribeList,
        names -> DeltaDiscoveryRequest.newBuilder().addAllResourceNamesSubscribe(names).build());
  }

  @Override
  public InputStream stream(M value) {
    return plain.stream(value);
  }

  @Override
  public M parse(InputStream stream) {
    try {
      return parse(bytesOf(stream));
    } catch (InvalidProtocolBufferException e) {
      return InvalidRequest.of(empty, e);
    } catch (IOException e) {
      throw Status.INTERNAL
          .withDescription("cannot read a request: " + e.getMessage())
          .withCause(e)
          .asRuntimeException();
    }
  }

  /**
   * The bytes of {@code stream}, read into an array of their size where the stream knows it, as
   * gRPC's do: {@code readAllBytes} would copy a request of thousands of names through chunks.
   */
  private static byte[] bytesOf(InputStream stream) throws IOException {
    if (!(stream instanceof KnownLength)) {
      return stream.readAllBytes();
    }
    byte[] bytes = new byte[stream.available()];
    int read = stream.readNBytes(bytes, 0, bytes.length);
    if (read < bytes.length || stream.read() >= 0) {
      throw new IOException(
          "the request's length is not the " + bytes.length + " bytes its stream said");
    }
    return bytes;
  }

  M parse(byte[] bytes) throws InvalidProtocolBufferException {
    // Where the names are: one run of fields of names, as every encoder writes them.
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
        if (WireFormat.getTagFieldNumber(tag) == namesField
            && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
          oneRun &= start < 0 || at == end;
          start = start < 0 ? at : start;
          end = in.getTotalBytesRead();
          count++;
        }
      }
    } catch (IOException garbage) {
      return parser.parseFrom(bytes); // says what is wrong with it, as the plain parser would
    }
    if (count < FEW_NAMES || !oneRun) {
      return parser.parseFrom(bytes);
    }
    EncodedNames encodedNames = new EncodedNames(bytes, start, end - start);
    M names = decoded.getIfPresent(encodedNames);
    if (names == null) {
      EncodedNames own = encodedNames.copy(); // the key must not hold the whole request
      names = holding.apply(Subscription.sharedList(namesOf.apply(parser.parseFrom(own.bytes))));
      decoded.put(own, names);
    }
    @SuppressWarnings("unchecked")
    M request =
        (M)
            names.toBuilder()
                .mergeFrom(bytes, 0, start)
                .mergeFrom(bytes, end, bytes.length - end)
                .build();
    return request;
  }

  /**
   * A run of encoded names, looked up where it lies in the request: no copy is made to look it up,
   * and its hash reads eight bytes at a time (protobuf's own {@code ByteString} hash reads one byte
   * at a time and was most of the cost of an ACK). Equality compares the bytes, so a collision
   * costs a comparison, never a wrong list.
   */
  static final class EncodedNames {
    private static final VarHandle LONGS =
        MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private final byte[] bytes;
    private final int offset;
    private final int length;
    private final int hash;

    EncodedNames(byte[] bytes, int offset, int length) {
      this.bytes = bytes;
      this.offset = offset;
      this.length = length;
      this.hash = hash(bytes, offset, length);
    }

    /** The same run in an array of its own, so the request it came in can be freed. */
    EncodedNames copy() {
      return new EncodedNames(Arrays.copyOfRange(bytes, offset, offset + length), 0, length);
    }

    private static int hash(byte[] bytes, int offset, int length) {
      long h = length;
      int i = offset;
      int end = offset + length;
      for (; i + Long.BYTES <= end; i += Long.BYTES) {
        h = Long.rotateLeft(h ^ (long) LONGS.get(bytes, i), 29) * 0x9E3779B97F4A7C15L;
      }
      for (; i < end; i++) {
        h = (h ^ bytes[i]) * 0x100000001B3L;
      }
      h ^= h >>> 32;
      return (int) h;
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof EncodedNames that
          && hash == that.hash
          && length == that.length
          && Arrays.equals(
              bytes, offset, offset + length, that.bytes, that.offset, that.offset + that.length);
    }

    @Override
    public int hashCode() {
      return hash;
    }
  }
}
