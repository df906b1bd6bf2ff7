package io.xdsproxy.core;

import com.google.protobuf.AnyProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DurationProto;
import com.google.protobuf.EmptyProto;
import com.google.protobuf.StructProto;
import com.google.protobuf.TimestampProto;
import com.google.protobuf.TypeRegistry;
import com.google.protobuf.WrappersProto;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every message type of the Envoy API (and the xDS and UDPA protos it embeds), for reading and
 * writing resources in proto3 JSON and text format. An {@code Any} in those formats names its type,
 * and the body of a Listener is full of them (filters, transport sockets, extensions), so the
 * parsers need all the API's types, not just the resource types.
 *
 * <p>The types are found once, on first use, by listing the protobuf file classes in the jar that
 * holds the API (the fat jar in production).
 */
public final class ApiTypes {

  private static final Logger log = LoggerFactory.getLogger(ApiTypes.class);
  private static final List<String> PACKAGES =
      List.of(
          "io/envoyproxy/envoy/",
          "com/github/xds/",
          "com/github/udpa/",
          "io/envoyproxy/pgv/",
          "xds/",
          "udpa/");

  private ApiTypes() {}

  /** For {@link JsonFormat}: proto3 JSON and (through JSON) YAML. */
  public static JsonFormat.TypeRegistry json() {
    return Holder.JSON;
  }

  /** For {@link com.google.protobuf.TextFormat}. */
  public static TypeRegistry text() {
    return Holder.TEXT;
  }

  private static final class Holder {
    static final List<Descriptor> MESSAGES = findMessages();
    static final JsonFormat.TypeRegistry JSON =
        JsonFormat.TypeRegistry.newBuilder().add(MESSAGES).build();
    static final TypeRegistry TEXT = TypeRegistry.newBuilder().add(MESSAGES).build();
  }

  private static List<Descriptor> findMessages() {
    List<FileDescriptor> files =
        new ArrayList<>(
            List.of(
                AnyProto.getDescriptor(),
                DurationProto.getDescriptor(),
                EmptyProto.getDescriptor(),
                StructProto.getDescriptor(),
                TimestampProto.getDescriptor(),
                WrappersProto.getDescriptor()));
    ClassLoader loader = ApiTypes.class.getClassLoader();
    for (String className : fileClassNames()) {
      try {
        Method getDescriptor = Class.forName(className, false, loader).getMethod("getDescriptor");
        if (getDescriptor.getReturnType() == FileDescriptor.class) {
          files.add((FileDescriptor) getDescriptor.invoke(null));
        }
      } catch (ReflectiveOperationException | LinkageError e) {
        log.debug("skipping {}: {}", className, e.toString());
      }
    }
    List<Descriptor> messages = new ArrayList<>();
    files.forEach(file -> messages.addAll(file.getMessageTypes()));
    log.debug("{} API message types known from {} proto files", messages.size(), files.size());
    return messages;
  }

  /**
   * The outer classes protoc generates for each .proto file: {@code FooProto}, {@code
   * FooOuterClass}.
   */
  private static List<String> fileClassNames() {
    List<String> entries = new ArrayList<>();
    try {
      Path location =
          Path.of(Listener.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (Files.isDirectory(location)) {
        try (Stream<Path> paths = Files.walk(location)) {
          paths.forEach(
              path -> entries.add(location.relativize(path).toString().replace('\\', '/')));
        }
      } else {
        try (JarFile jar = new JarFile(location.toFile())) {
          for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
            entries.add(e.nextElement().getName());
          }
        }
      }
    } catch (IOException | URISyntaxException | RuntimeException e) {
      throw new IllegalStateException("cannot list the Envoy API classes: " + e, e);
    }
    List<String> names = new ArrayList<>();
    for (String entry : entries) {
      boolean fileClass =
          (entry.endsWith("Proto.class") || entry.endsWith("OuterClass.class"))
              && !entry.contains("$");
      if (fileClass && PACKAGES.stream().anyMatch(entry::startsWith)) {
        names.add(entry.substring(0, entry.length() - ".class".length()).replace('/', '.'));
      }
    }
    return names;
  }
}
