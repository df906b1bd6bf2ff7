package io.xdsproxy.app.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.stream.Stream;

/** The example resource directory shipped in deploy/, as tests serve it. */
public final class ExampleResources {

  public static final Path DIRECTORY = Path.of("../deploy/examples/resources");

  private ExampleResources() {}

  /**
   * Writes the example into {@code target} with its endpoint's port (8080) moved to {@code port},
   * each file written beside and moved into place, as editors and ConfigMap updates do.
   */
  public static void copyPointingAt(Path target, int port) throws IOException {
    try (Stream<Path> files = Files.list(DIRECTORY)) {
      for (Path file : (Iterable<Path>) files::iterator) {
        String text = Files.readString(file).replace("port_value: 8080", "port_value: " + port);
        Path temporary = Files.writeString(target.resolve("." + file.getFileName() + ".tmp"), text);
        Files.move(
            temporary,
            target.resolve(file.getFileName()),
            StandardCopyOption.REPLACE_EXISTING,
            StandardCopyOption.ATOMIC_MOVE);
      }
    }
  }
}
