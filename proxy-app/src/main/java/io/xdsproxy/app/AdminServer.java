package io.xdsproxy.app;

import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import io.xdsproxy.downstream.xds.HttpReplies;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * One of the proxy's HTTP listeners: monitoring (health, readiness, metrics, on every interface),
 * admin (debug endpoints, on the loopback by default), or REST-JSON xDS. Each serves the handlers
 * it is given and nothing else.
 */
final class AdminServer implements AutoCloseable {

  private final HttpServer server;

  /**
   * Plain HTTP, or HTTPS when {@code tls} is given (only the REST-JSON port, as the xDS port is).
   */
  AdminServer(
      InetSocketAddress address,
      Map<String, HttpHandler> handlers,
      Executor executor,
      Optional<HttpsConfigurator> tls)
      throws IOException {
    if (tls.isPresent()) {
      HttpsServer https = HttpsServer.create(address, 0);
      https.setHttpsConfigurator(tls.get());
      server = https;
    } else {
      server = HttpServer.create(address, 0);
    }
    server.setExecutor(executor);
    handlers.forEach(server::createContext);
    server.start();
  }

  /**
   * {@code /healthz}, answered while the process runs, and {@code /readyz}, as {@code ready} says.
   */
  static Map<String, HttpHandler> probes(BooleanSupplier ready) {
    return probes(ready, () -> "");
  }

  /**
   * As {@link #probes(BooleanSupplier)}, {@code /readyz} followed by what {@code detail} says, if
   * anything: {@code ready: serving state from disk …}.
   */
  static Map<String, HttpHandler> probes(BooleanSupplier ready, Supplier<String> detail) {
    return Map.of(
        "/healthz", exchange -> HttpReplies.text(exchange, 200, "ok\n"),
        "/readyz",
            exchange -> {
              boolean isReady = ready.getAsBoolean();
              String more = detail.get();
              HttpReplies.text(
                  exchange,
                  isReady ? 200 : 503,
                  (isReady ? "ready" : "not ready") + (more.isEmpty() ? "" : ": " + more) + "\n");
            });
  }

  /** A handler that answers GET with the text {@code body} makes, of {@code contentType}. */
  static HttpHandler text(Supplier<String> body, String contentType) {
    return exchange -> {
      exchange.getResponseHeaders().set("Content-Type", contentType);
      HttpReplies.text(exchange, 200, body.get());
    };
  }

  int port() {
    return server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
