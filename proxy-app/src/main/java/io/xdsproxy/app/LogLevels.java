package io.xdsproxy.app;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.xdsproxy.app.logging.Logs;
import io.xdsproxy.downstream.xds.HttpReplies;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code /logging} on the admin listener, after Envoy's admin endpoint of that name: {@code GET}
 * lists the loggers with a level of their own, as JSON ({@code {"root": "info",
 * "io.xdsproxy.upstream": "debug"}}); {@code POST /logging?level=debug} sets the root's level,
 * {@code POST /logging?io.xdsproxy.upstream=debug} one logger's (several parameters set several),
 * and answers with the list as it is then. A request naming an unknown level or a malformed logger
 * name changes nothing. The change lasts until the process exits: {@code --log-level} is what a
 * restart gets.
 */
final class LogLevels implements HttpHandler {

  private static final Logger log = LoggerFactory.getLogger(LogLevels.class);

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    switch (exchange.getRequestMethod()) {
      case "GET" -> reply(exchange, 200, listing());
      case "POST" -> change(exchange);
      default -> {
        exchange.getResponseHeaders().set("Allow", "GET, POST");
        reply(
            exchange,
            405,
            "/logging takes GET (the levels) or POST (?level=LEVEL, ?LOGGER=LEVEL)\n");
      }
    }
  }

  private static void change(HttpExchange exchange) throws IOException {
    Map<String, String> wanted;
    try {
      wanted = parameters(exchange.getRequestURI().getRawQuery());
    } catch (IllegalArgumentException e) {
      reply(exchange, 400, "the query is not URL-encoded: " + e.getMessage() + "\n");
      return;
    }
    if (wanted.isEmpty()) {
      reply(
          exchange,
          400,
          "nothing to change: POST /logging?level=LEVEL for every logger, ?LOGGER=LEVEL for one\n");
      return;
    }
    // Each is checked before any is set: a request with a mistake in it changes nothing.
    for (Map.Entry<String, String> level : wanted.entrySet()) {
      Optional<String> problem = Logs.problem(level.getKey(), level.getValue());
      if (problem.isPresent()) {
        reply(exchange, 400, problem.get() + "\n");
        return;
      }
    }
    wanted.forEach(Logs::setLevel);
    log.info("log levels set from {}: {}", exchange.getRemoteAddress(), wanted);
    reply(exchange, 200, listing());
  }

  /** Logger to level, as the query names them: {@code level} stands for the root. */
  private static Map<String, String> parameters(String query) {
    Map<String, String> parameters = new LinkedHashMap<>();
    if (query != null) {
      for (String parameter : query.split("&")) {
        if (!parameter.isEmpty()) {
          int equals = parameter.indexOf('=');
          String name = decode(equals < 0 ? parameter : parameter.substring(0, equals));
          parameters.put(
              name.equals("level") ? Logs.ROOT : name,
              equals < 0 ? "" : decode(parameter.substring(equals + 1)));
        }
      }
    }
    return parameters;
  }

  private static String listing() {
    return ConfigDump.GSON.toJson(Logs.levels()) + "\n";
  }

  private static String decode(String part) {
    return URLDecoder.decode(part, StandardCharsets.UTF_8);
  }

  /** A listing as JSON, anything else as text, written as every admin answer is. */
  private static void reply(HttpExchange exchange, int status, String body) throws IOException {
    exchange
        .getResponseHeaders()
        .set("Content-Type", status == 200 ? "application/json" : "text/plain; charset=utf-8");
    HttpReplies.text(exchange, status, body);
  }
}
