package io.xdsproxy.bench;

import io.grpc.Server;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * How the benchmarks drive a server in its own process ({@link BenchControlPlane}, {@link
 * BenchFloor}): it prints {@code ready PORT} once listening ({@code ready PORT PROVIDER} with TLS,
 * naming the TLS provider it serves on), then reads commands from stdin. {@code update} makes the
 * next round and prints {@code updated ROUND NANOTIME}, the moment it began (the monotonic clock is
 * the machine's, comparable with the clients' process); {@code stats} prints {@code stats STREAMS
 * MESSAGES BYTES}, what the server sent since it started; {@code quit}, or the end of stdin, stops
 * the server.
 */
final class StdinCommands {

  /** Makes the server's next round and returns its number. */
  interface Update {
    int next() throws Exception;
  }

  private StdinCommands() {}

  /**
   * Serves {@code server}'s commands until told to stop, having said it listens (on {@code
   * tlsProvider} with TLS): {@code update} runs {@code update}, which returns the round it made;
   * {@code stats} prints what {@code stats} says, streams, messages and bytes separated by spaces.
   */
  static void serve(
      Server server, Optional<String> tlsProvider, Update update, Supplier<String> stats)
      throws Exception {
    System.out.println("ready " + server.getPort() + tlsProvider.map(p -> " " + p).orElse(""));
    System.out.flush();
    BufferedReader commands =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String command = commands.readLine(); command != null; command = commands.readLine()) {
      switch (command.trim()) {
        case "update" -> {
          long at = System.nanoTime();
          int round = update.next();
          System.out.println("updated " + round + " " + at);
        }
        case "stats" -> System.out.println("stats " + stats.get());
        case "quit" -> {
          server.shutdownNow();
          return;
        }
        default -> System.out.println("error unknown command " + command);
      }
      System.out.flush();
    }
    server.shutdownNow();
  }
}
