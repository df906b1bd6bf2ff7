package io.xdsproxy.upstream.testing;

import static org.awaitility.Awaitility.await;

import io.grpc.Server;
import java.net.BindException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

/**
 * Starting a control plane again on the port it had, as a restarted one would be. The port came
 * from the ephemeral range, so while it was free a client's outgoing connection may have been given
 * it as its local port: the proxy reconnecting to 127.0.0.1 on that very port can even connect to
 * itself (TCP's simultaneous open). Such a socket lives only until gRPC finds no server behind it,
 * so the bind is tried again for a while instead of failing the test ("Address already in use",
 * seen once in FaultsTest under load).
 */
final class SamePort {

  private static final Duration PATIENCE = Duration.ofSeconds(10);

  private SamePort() {}

  /** The server {@code build} makes, started; a port taken meanwhile is waited for. */
  static Server start(Supplier<Server> build) {
    AtomicReference<Server> started = new AtomicReference<>();
    await()
        .atMost(PATIENCE)
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(50))
        .ignoreExceptionsMatching(SamePort::portTaken)
        .until(
            () -> {
              started.set(build.get().start());
              return true;
            });
    return started.get();
  }

  private static boolean portTaken(Throwable e) {
    return e instanceof BindException || e.getCause() instanceof BindException;
  }
}
