package io.xdsproxy.app.logging;

import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.StackTraceElementProxy;
import io.xdsproxy.core.ClientStrings;
import java.util.Arrays;

/**
 * A logged exception as a text line's stack trace shows it: its messages, and its causes' and
 * suppressed exceptions', escaped ({@link ClientStrings#escaped}) and cut, since an exception's
 * message may quote a client's string; the frames, the proxy's own, as they are. So the lines below
 * a text line are the stack trace's and no client's.
 */
record EscapedThrowable(IThrowableProxy proxy) implements IThrowableProxy {

  /** The most characters of an exception's message shown. */
  private static final int MESSAGE = 4096;

  @Override
  public String getMessage() {
    return escaped(proxy.getMessage());
  }

  @Override
  public String getOverridingMessage() {
    return escaped(proxy.getOverridingMessage());
  }

  @Override
  public String getClassName() {
    return proxy.getClassName();
  }

  @Override
  public StackTraceElementProxy[] getStackTraceElementProxyArray() {
    return proxy.getStackTraceElementProxyArray();
  }

  @Override
  public int getCommonFrames() {
    return proxy.getCommonFrames();
  }

  @Override
  public IThrowableProxy getCause() {
    return proxy.getCause() == null ? null : new EscapedThrowable(proxy.getCause());
  }

  @Override
  public IThrowableProxy[] getSuppressed() {
    IThrowableProxy[] suppressed = proxy.getSuppressed();
    return suppressed == null
        ? null
        : Arrays.stream(suppressed).map(EscapedThrowable::new).toArray(IThrowableProxy[]::new);
  }

  @Override
  public boolean isCyclic() {
    return proxy.isCyclic();
  }

  private static String escaped(String message) {
    return ClientStrings.escaped(ClientStrings.bounded(message, MESSAGE));
  }
}
