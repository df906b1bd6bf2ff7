package io.xdsproxy.app.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP round-robin load balancer on loopback, as replicas are deployed behind (a Kubernetes
 * Service, an L4 cloud balancer): each accepted connection is relayed, byte for byte, to the next
 * of the current backends in turn. It knows nothing of HTTP/2, so a client's streams stay on the
 * replica its connection went to until the connection ends. Closing either side of a relayed
 * connection closes the other. Backends may be added while it runs; a connection goes to the next
 * backend of the list as it is when the connection comes.
 *
 * <p>It connects to the backends from the loopback address the system chooses, or from one the test
 * gives, as a service mesh's sidecar relays inbound connections from its own (Istio's from
 * 127.0.0.6).
 *
 * <p>A thread per direction per connection: a test has tens of connections, not thousands.
 */
public final class TcpBalancer implements AutoCloseable {

  private static final int CONNECT_TIMEOUT_MILLIS = 5_000;
  private static final int BUFFER_BYTES = 64 * 1024;

  private final ServerSocket listener;
  private final List<InetSocketAddress> backends = new CopyOnWriteArrayList<>();

  /** Where relayed connections leave from; null: where the system chooses. */
  private final InetAddress source;

  /** Connections relayed to each backend so far, and open now. */
  private final Map<InetSocketAddress, AtomicInteger> routed = new ConcurrentHashMap<>();

  private final Map<InetSocketAddress, AtomicInteger> open = new ConcurrentHashMap<>();
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final AtomicInteger accepted = new AtomicInteger();
  private final Thread acceptor;
  private volatile boolean closed;

  public TcpBalancer(List<InetSocketAddress> initialBackends) throws IOException {
    this(initialBackends, null);
  }

  /** A balancer whose connections to the backends leave from {@code source}. */
  public TcpBalancer(List<InetSocketAddress> initialBackends, InetAddress source)
      throws IOException {
    this.source = source;
    initialBackends.forEach(this::addBackend);
    listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    acceptor = new Thread(this::accept, "tcp-balancer-accept-" + listener.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** The port clients connect to. */
  public int port() {
    return listener.getLocalPort();
  }

  /** Adds a backend: connections from now on are spread over it too. */
  public void addBackend(InetSocketAddress backend) {
    routed.putIfAbsent(backend, new AtomicInteger());
    open.putIfAbsent(backend, new AtomicInteger());
    backends.add(backend);
  }

  /** How many connections went to each backend so far, in the order the backends were added. */
  public Map<InetSocketAddress, Integer> connectionsPerBackend() {
    return counts(routed);
  }

  /**
   * How many relayed connections each backend has open now, in the order the backends were added.
   */
  public Map<InetSocketAddress, Integer> openConnectionsPerBackend() {
    return counts(open);
  }

  /** How many connections were accepted so far, relayed or not. */
  public int acceptedConnections() {
    return accepted.get();
  }

  private Map<InetSocketAddress, Integer> counts(Map<InetSocketAddress, AtomicInteger> counters) {
    Map<InetSocketAddress, Integer> counts = new LinkedHashMap<>();
    backends.forEach(backend -> counts.put(backend, counters.get(backend).get()));
    return counts;
  }

  private void accept() {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return; // closed
      }
      // Counted before the relay starts, so a test that waits for the n-th connection knows where
      // it went.
      int index = accepted.getAndIncrement();
      List<InetSocketAddress> now = List.copyOf(backends);
      if (now.isEmpty()) {
        closeQuietly(client);
        continue;
      }
      relay(client, now.get(index % now.size()));
    }
  }

  /**
   * Connects to {@code backend} and copies bytes both ways; when either side ends, both are closed.
   */
  private void relay(Socket client, InetSocketAddress backend) {
    sockets.add(client);
    routed.get(backend).incrementAndGet();
    Socket server = new Socket();
    sockets.add(server);
    try {
      client.setTcpNoDelay(true);
      server.setTcpNoDelay(true);
      if (source != null) {
        server.bind(new InetSocketAddress(source, 0));
      }
      server.connect(backend, CONNECT_TIMEOUT_MILLIS);
    } catch (IOException e) {
      // The backend refused: the client sees its connection closed, as with a real L4 balancer.
      closeBoth(client, server);
      return;
    }
    open.get(backend).incrementAndGet();
    if (closed) {
      closeBoth(client, server);
      open.get(backend).decrementAndGet();
      return;
    }
    AtomicInteger directionsLeft = new AtomicInteger(2);
    Runnable ended =
        () -> {
          closeBoth(client, server);
          if (directionsLeft.decrementAndGet() == 0) {
            open.get(backend).decrementAndGet();
          }
        };
    String name = client.getPort() + "-" + backend.getPort();
    start("tcp-balancer-up-" + name, () -> copy(client, server), ended);
    start("tcp-balancer-down-" + name, () -> copy(server, client), ended);
  }

  private static void start(String name, IoTask copy, Runnable ended) {
    Thread thread =
        new Thread(
            () -> {
              try {
                copy.run();
              } catch (IOException e) {
                // a reset or a closed socket: the connection is over either way
              } finally {
                ended.run();
              }
            },
            name);
    thread.setDaemon(true);
    thread.start();
  }

  private static void copy(Socket from, Socket to) throws IOException {
    InputStream in = from.getInputStream();
    OutputStream out = to.getOutputStream();
    byte[] buffer = new byte[BUFFER_BYTES];
    for (int read = in.read(buffer); read >= 0; read = in.read(buffer)) {
      out.write(buffer, 0, read);
      out.flush();
    }
  }

  private void closeBoth(Socket client, Socket server) {
    closeQuietly(client);
    closeQuietly(server);
    sockets.remove(client);
    sockets.remove(server);
  }

  private static void closeQuietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException e) {
      // closing: nothing left to do
    }
  }

  /** Stops accepting and closes every relayed connection, both sides. */
  @Override
  public void close() throws IOException {
    closed = true;
    listener.close();
    sockets.forEach(TcpBalancer::closeQuietly);
    sockets.clear();
  }

  @FunctionalInterface
  private interface IoTask {
    void run() throws IOException;
  }
}
