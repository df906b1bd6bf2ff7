package io.xdsproxy.app;

import io.netty.channel.Channel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SocketChannel;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The xDS port's listening channel, which takes a connection only if {@link ConnectionCounts}
 * admits its peer: one past a limit is closed as soon as it is accepted, before Netty gives it a
 * pipeline, so it costs neither a TLS handshake nor HTTP/2 state, and the clients already connected
 * see nothing of it. A connection taken gives its place back when it closes, however it closes.
 *
 * <p>Netty's NIO server channel, as the port's event loops are NIO ({@link ServerEventLoops}): its
 * accept ({@code NioServerSocketChannel.doReadMessages}) with the admission in between. Runs on the
 * port's accepting thread.
 */
final class LimitedServerChannel extends NioServerSocketChannel {

  private static final Logger log = LoggerFactory.getLogger(LimitedServerChannel.class);

  /**
   * Refusals in one read before the accepting thread turns to its other work; the connections still
   * waiting are taken at the next.
   */
  private static final int MOST_REFUSED_PER_READ = 64;

  private final ConnectionCounts counts;

  LimitedServerChannel(ConnectionCounts counts) {
    this.counts = counts;
  }

  @Override
  protected int doReadMessages(List<Object> accepted) throws Exception {
    for (int refused = 0; refused < MOST_REFUSED_PER_READ; refused++) {
      SocketChannel socket = javaChannel().accept();
      if (socket == null) {
        return 0;
      }
      InetAddress peer;
      try {
        peer = ((InetSocketAddress) socket.getRemoteAddress()).getAddress();
      } catch (IOException e) {
        closeQuietly(socket); // gone already
        continue;
      }
      if (counts.admit(peer).isPresent()) {
        refuse(socket);
        continue;
      }
      try {
        accepted.add(new Counted(this, socket, peer, counts));
        return 1;
      } catch (RuntimeException e) {
        counts.release(peer);
        log.warn("cannot take a connection from {}: {}", peer.getHostAddress(), e.toString());
        closeQuietly(socket);
        return 0;
      }
    }
    return 0;
  }

  /**
   * Closes with a reset (SO_LINGER 0): the client learns at once, and this side keeps no TIME_WAIT
   * socket for each connection a flood makes.
   */
  private static void refuse(SocketChannel socket) {
    try {
      socket.setOption(StandardSocketOptions.SO_LINGER, 0);
    } catch (IOException | RuntimeException e) {
      // closed with a FIN instead
    }
    closeQuietly(socket);
  }

  private static void closeQuietly(SocketChannel socket) {
    try {
      socket.close();
    } catch (IOException e) {
      // nothing more to do with it
    }
  }

  /**
   * An admitted connection, which gives its place back when its socket closes: {@code doClose} runs
   * on every way out, a normal close and the forced one of a connection whose event loop would not
   * take it.
   */
  private static final class Counted extends NioSocketChannel {
    private final InetAddress peer;
    private final ConnectionCounts counts;
    private final AtomicBoolean released = new AtomicBoolean();

    Counted(Channel parent, SocketChannel socket, InetAddress peer, ConnectionCounts counts) {
      super(parent, socket);
      this.peer = peer;
      this.counts = counts;
    }

    @Override
    protected void doClose() throws Exception {
      try {
        super.doClose();
      } finally {
        if (released.compareAndSet(false, true)) {
          counts.release(peer);
        }
      }
    }
  }
}
