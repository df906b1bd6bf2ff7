package io.xdsproxy.downstream.xds;

import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/** Text answers of the proxy's HTTP listeners: REST-JSON discovery here, the admin pages. */
public final class HttpReplies {

  private HttpReplies() {}

  /** Answers with the text {@code body}, plain text unless the handler set a Content-Type. */
  public static void text(HttpExchange exchange, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    if (!exchange.getResponseHeaders().containsKey("Content-Type")) {
      exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
    }
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }
}
