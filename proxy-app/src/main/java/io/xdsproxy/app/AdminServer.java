package io.xdsproxy.app;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
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
        "/healthz", exchange -> reply(exchange, 200, "ok\n"),
        "/readyz",
            exchange -> {
              boolean isReady = ready.getAsBoolean();
              String more = detail.get();
              reply(
                  exchange,
                  isReady ? 200 : 503,
                  (isReady ? "ready" : "not ready") + (more.isEmpty() ? "" : ": " + more) + "\n");
            });
  }

  /** A handler that answers GET with the text {@code body} makes, of {@code contentType}. */
  static HttpHandler text(Supplier<String> body, String contentType) {
    return exchange -> {
      exchange.getResponseHeaders().set("Content-Type", contentType);
      reply(exchange, 200, body.get());
    };
  }

  int port() {
    return server.getAddress().getPort();
  }

  /** Answers with the text {@code body}, plain text unless the handler set a Content-Type. */
  static void reply(HttpExchange exchange, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    if (!exchange.getResponseHeaders().containsKey("Content-Type")) {
      exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
    }
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
