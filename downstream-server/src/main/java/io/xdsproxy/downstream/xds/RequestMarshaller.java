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
import io.grpc.Status;
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
 * Subscription} finds what it made of a list by the list's identity. A call's next request is first
 * compared with the names its last one held ({@link StreamLane#lastNames}), where they stand: an
 * ACK that repeats them is neither scanned name by name nor hashed. Requests are read into a buffer
 * of the thread's, so an ACK of thousands of names allocates no copy of them. The stream reads its
 * call's requests with it ({@link #read}); gRPC hands them over unread ({@link
 * AggregatedDiscoveryService#AS_RECEIVED}).
 *
 * @param <M> the request message: {@link #SOTW}'s names are its resource_names, {@link #DELTA}'s
 *     its resource_names_subscribe
 */
public final class RequestMarshaller<M extends Message> {

  /**
   * A request with fewer names is parsed as usual: not worth the lookup. One with as many or more
   * in one run gets the list every request with the same names gets.
   */
  static final int MANY_NAMES = 16;

  /** SotW requests, by their resource_names. */
  public static final RequestMarshaller<DiscoveryRequest> SOTW = sotw();

  /** Delta requests, by their resource_names_subscribe. */
  public static final RequestMarshaller<DeltaDiscoveryRequest> DELTA = delta();

  private final M empty;
  private final Parser<M> parser;
  private final int namesField;
  private final Function<M, List<String>> namesOf;
  private final Function<List<String>, M> holding;

  /**
   * Encoded names to a request holding just those names, decoded; bounded by encoded size, so no
   * client can grow it without end. A request is made from it with {@code toBuilder()}, which
   * shares its list of names rather than copying it.
   */
  private final Cache<EncodedNames, Decoded<M>> decoded =
      Caffeine.newBuilder()
          .maximumWeight(32L * 1024 * 1024)
          .<EncodedNames, Decoded<M>>weigher((encoded, names) -> encoded.length)
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

  /**
   * {@code stream}, a whole request as gRPC hands it over, read for the call whose lane is {@code
   * lane} (null for none). Bytes that are not a request give a request that says so ({@link
   * InvalidRequest}); a stream that cannot be read throws INTERNAL.
   */
  public M read(InputStream stream, StreamLane lane) {
    try {
      if (!(stream instanceof KnownLength)) {
        byte[] bytes = stream.readAllBytes();
        return parse(bytes, bytes.length, lane);
      }
      int length = stream.available();
      byte[] bytes = ReadBuffer.holding(length);
      int read = stream.readNBytes(bytes, 0, length);
      if (read < length || stream.read() >= 0) {
        throw new IOException(
            "the request's length is not the " + length + " bytes its stream said");
      }
      return parse(bytes, length, lane);
    } catch (InvalidProtocolBufferException e) {
      return InvalidRequest.of(empty, e);
    } catch (IOException e) {
      throw Status.INTERNAL
          .withDescription("cannot read a request: " + e.getMessage())
          .withCause(e)
          .asRuntimeException();
    }
  }

  /** {@code bytes}, a whole request, read as a request of no call. */
  M parse(byte[] bytes) throws InvalidProtocolBufferException {
    return parse(bytes, bytes.length, null);
  }

  /**
   * The request in the first {@code length} bytes of {@code bytes}, for the call whose lane is
   * {@code lane} (none in tests and benchmarks that parse alone), whose {@link
   * StreamLane#lastNames} it then holds the names of, or null if it held few. Nothing keeps {@code
   * bytes}: it may be a thread's buffer, written again by the next request.
   */
  M parse(byte[] bytes, int length, StreamLane lane) throws InvalidProtocolBufferException {
    Decoded<M> last = lane == null ? null : lane.lastNames();
    // Where the names are: one run of fields of names, as every encoder writes them. The run the
    // call's last request held is compared where the run starts and, if it is there, skipped
    // whole: a SotW ACK repeats its names, and reading them tag by tag costs as much as hashing.
    int start = -1;
    int end = -1;
    int count = 0;
    boolean oneRun = true;
    boolean asBefore = false;
    CodedInputStream in = CodedInputStream.newInstance(bytes, 0, length);
    try {
      while (true) {
        int at = in.getTotalBytesRead();
        int tag = in.readTag();
        if (tag == 0) {
          break;
        }
        if (WireFormat.getTagFieldNumber(tag) == namesField
            && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
          oneRun &= start < 0 || at == end;
          if (start < 0 && last != null && last.encoded().isAt(bytes, at, length)) {
            in.skipRawBytes(at + last.encoded().length - in.getTotalBytesRead());
            asBefore = true;
            count += namesOf.apply(last.request()).size();
          } else {
            in.skipField(tag);
            count++;
          }
          start = start < 0 ? at : start;
          end = in.getTotalBytesRead();
        } else {
          in.skipField(tag);
        }
      }
    } catch (IOException garbage) {
      return plain(bytes, length, lane); // says what is wrong, as the plain parser would
    }
    if (count < MANY_NAMES || !oneRun) {
      return plain(bytes, length, lane);
    }
    Decoded<M> names =
        asBefore && end - start == last.encoded().length
            ? stillCached(last)
            : lookUp(new EncodedNames(bytes, start, end - start));
    @SuppressWarnings("unchecked")
    M request =
        (M)
            names.request().toBuilder()
                .mergeFrom(bytes, 0, start)
                .mergeFrom(bytes, end, length - end)
                .build();
    if (lane != null) {
      lane.lastNames(names);
    }
    return request;
  }

  /** The request in {@code bytes} parsed as protobuf parses it, its names not looked up. */
  private M plain(byte[] bytes, int length, StreamLane lane) throws InvalidProtocolBufferException {
    if (lane != null) {
      lane.lastNames(null);
    }
    return parser.parseFrom(bytes, 0, length);
  }

  /** The names of {@code encoded}, decoded once for every request that holds them. */
  private Decoded<M> lookUp(EncodedNames encoded) throws InvalidProtocolBufferException {
    Decoded<M> names = decoded.getIfPresent(encoded);
    if (names == null) {
      EncodedNames own = encoded.copy(); // the key must not hold the request's bytes
      M request =
          holding.apply(Subscription.sharedList(namesOf.apply(parser.parseFrom(own.bytes))));
      names = new Decoded<>(own, request);
      decoded.put(own, names);
    }
    return names;
  }

  /**
   * {@code last}, found again in a request of its call without hashing it: looked up by its key,
   * whose hash is kept and which the cache compares by identity first, so that a list only
   * established streams send stays cached as one that newcomers send does; put back if it was
   * evicted, so that newcomers share it again.
   */
  private Decoded<M> stillCached(Decoded<M> last) {
    if (decoded.getIfPresent(last.encoded()) == null) {
      decoded.put(last.encoded(), last);
    }
    return last;
  }

  /**
   * A run of encoded names and the request holding just those names, decoded: what the cache keeps
   * and what a call keeps of its last request ({@link StreamLane#lastNames}).
   */
  record Decoded<M>(EncodedNames encoded, M request) {}

  /**
   * The buffer a thread reads requests into: a SotW ACK repeats its thousands of names, tens of
   * KiB, and a fresh array for each would be most of what reading it allocates. Kept up to {@link
   * #KEPT} bytes; a larger request gets an array of its own.
   */
  private static final class ReadBuffer {
    private static final int KEPT = 1 << 20;
    private static final ThreadLocal<byte[]> BUFFER = ThreadLocal.withInitial(() -> new byte[0]);

    static byte[] holding(int length) {
      if (length > KEPT) {
        return new byte[length];
      }
      byte[] buffer = BUFFER.get();
      if (buffer.length < length) {
        buffer = new byte[Math.min(KEPT, Math.max(length, 2 * buffer.length))];
        BUFFER.set(buffer);
      }
      return buffer;
    }
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

    /**
     * Whether {@code bytes}, of which the first {@code limit} are read, hold this run at {@code
     * at}.
     */
    boolean isAt(byte[] bytes, int at, int limit) {
      return at + length <= limit
          && Arrays.equals(this.bytes, offset, offset + length, bytes, at, at + length);
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
