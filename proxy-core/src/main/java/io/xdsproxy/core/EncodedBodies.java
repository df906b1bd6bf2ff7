package io.xdsproxy.core;

import com.google.protobuf.Any;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import java.io.IOException;
import java.util.Arrays;
import java.util.List;

/**
 * The resources of a response as the bytes they arrived in, each an encoded {@code Any} at its
 * place in the message: what {@link ResourceDecoder} compares with the bytes of the resource it
 * held at that place before it parses anything. Regions of one array, the message's, which they
 * keep alive only as long as the response is being decoded: what a group keeps is parsed out of
 * them.
 */
public final class EncodedBodies {

  private final byte[] message;
  private final int[] starts;
  private final int[] lengths;
  private final int size;

  private EncodedBodies(byte[] message, int[] starts, int[] lengths, int size) {
    this.message = message;
    this.starts = starts;
    this.lengths = lengths;
    this.size = size;
  }

  /** Bodies found one by one in {@code message}. */
  public static Builder in(byte[] message) {
    return new Builder(message);
  }

  /**
   * {@code bodies} encoded, as a message would carry them (tests, and decoding parsed messages).
   */
  public static EncodedBodies of(List<Any> bodies) {
    Builder builder = new Builder(new byte[bodies.stream().mapToInt(Any::getSerializedSize).sum()]);
    int at = 0;
    for (Any body : bodies) {
      byte[] encoded = body.toByteArray();
      System.arraycopy(encoded, 0, builder.message, at, encoded.length);
      builder.add(at, encoded.length);
      at += encoded.length;
    }
    return builder.build();
  }

  public int size() {
    return size;
  }

  /** Whether body {@code index} is exactly {@code encoded}. */
  public boolean sameBytes(int index, byte[] encoded) {
    int start = starts[index];
    return encoded != null
        && lengths[index] == encoded.length
        && Arrays.equals(message, start, start + lengths[index], encoded, 0, encoded.length);
  }

  /** Body {@code index}, parsed into an {@code Any} of its own (its bytes copied out). */
  public Any parse(int index) throws InvalidProtocolBufferException {
    CodedInputStream input = CodedInputStream.newInstance(message, starts[index], lengths[index]);
    try {
      Any body = Any.parseFrom(input);
      input.checkLastTagWas(0); // what parsing an array checks: no stray end-group tag
      return body;
    } catch (InvalidProtocolBufferException e) {
      throw e;
    } catch (IOException e) { // reading an array fails only as a message that does not parse
      throw new InvalidProtocolBufferException(e);
    }
  }

  /** Collects the places of bodies in one message. */
  public static final class Builder {
    private final byte[] message;
    private int[] starts = new int[16];
    private int[] lengths = new int[16];
    private int size;

    private Builder(byte[] message) {
      this.message = message;
    }

    /** The next body: {@code length} bytes from {@code start}. */
    public Builder add(int start, int length) {
      if (size == starts.length) {
        starts = Arrays.copyOf(starts, size * 2);
        lengths = Arrays.copyOf(lengths, size * 2);
      }
      starts[size] = start;
      lengths[size] = length;
      size++;
      return this;
    }

    public EncodedBodies build() {
      return new EncodedBodies(message, starts, lengths, size);
    }
  }
}
