package io.xdsproxy.bench.jmh;

import io.grpc.KnownLength;
import java.io.InputStream;

/**
 * A received message as gRPC hands it to a marshaller: a stream that knows its length. Read from
 * encoded parts laid end to end, so that a client makes each request of the parts it sends every
 * time (its node, the names it repeats) and the few bytes that change, without copying them.
 * Concatenated encodings are one message: protobuf merges fields wherever they come.
 */
final class MessageInput extends InputStream implements KnownLength {

  private final byte[][] parts;
  private int part;
  private int offset;
  private int left;

  MessageInput(byte[]... parts) {
    this.parts = parts;
    for (byte[] bytes : parts) {
      left += bytes.length;
    }
  }

  @Override
  public int available() {
    return left;
  }

  @Override
  public int read() {
    if (!nextByteInPart()) {
      return -1;
    }
    left--;
    return parts[part][offset++] & 0xff;
  }

  @Override
  public int read(byte[] into, int at, int length) {
    if (length == 0) {
      return 0;
    }
    if (!nextByteInPart()) {
      return -1;
    }
    int count = Math.min(length, parts[part].length - offset);
    System.arraycopy(parts[part], offset, into, at, count);
    offset += count;
    left -= count;
    return count;
  }

  /** Moves past finished parts; false at the end of the message. */
  private boolean nextByteInPart() {
    while (part < parts.length && offset == parts[part].length) {
      part++;
      offset = 0;
    }
    return part < parts.length;
  }
}
