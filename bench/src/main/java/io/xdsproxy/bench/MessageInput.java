package io.xdsproxy.bench;

import io.grpc.Drainable;
import io.grpc.KnownLength;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * A message as gRPC hands it to a marshaller or frames it: a stream that knows its length, read
 * from encoded parts laid end to end, so that a client makes each request of the parts it sends
 * every time (its node, the names it repeats) and the few bytes that change, without copying them.
 * Concatenated encodings are one message: protobuf merges fields wherever they come. gRPC frames a
 * stream that knows its length without buffering it, and drains it into the frame without a copy
 * buffer of its own.
 */
public final class MessageInput extends InputStream implements KnownLength, Drainable {
  private final byte[][] parts;
  private int part;
  private int offset;
  private int left;

  public MessageInput(byte[]... parts) {
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
  public int drainTo(OutputStream target) throws IOException {
    int drained = left;
    for (; part < parts.length; part++, offset = 0) {
      target.write(parts[part], offset, parts[part].length - offset);
    }
    left = 0;
    return drained;
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

  @Override
  public void close() {}

  /** Moves past finished parts; false at the end of the message. */
  private boolean nextByteInPart() {
    while (part < parts.length && offset == parts[part].length) {
      part++;
      offset = 0;
    }
    return part < parts.length;
  }
}
