package io.xdsproxy.app.testing;

import java.util.ArrayDeque;
import java.util.Deque;

/** What a test opened (control planes, proxies, clients), closed after it, last opened first. */
public final class Opened implements AutoCloseable {

  private final Deque<AutoCloseable> opened = new ArrayDeque<>();

  /** {@code closeable}, to be closed with the rest. */
  public <T extends AutoCloseable> T add(T closeable) {
    opened.push(closeable);
    return closeable;
  }

  @Override
  public void close() throws Exception {
    while (!opened.isEmpty()) {
      opened.pop().close();
    }
  }
}
