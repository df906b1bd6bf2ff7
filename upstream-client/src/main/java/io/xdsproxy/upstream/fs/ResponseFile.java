package io.xdsproxy.upstream.fs;

import com.google.gson.Gson;
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.TextFormat;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.ResourceDecoder.InvalidResourceException;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;

/**
 * One file of a filesystem source: a DiscoveryResponse in proto3 JSON, YAML, text format or binary,
 * chosen by the file's extension, as Envoy reads them ("Filesystem subscriptions").
 */
final class ResponseFile {

  /**
   * A file bigger than this is refused rather than read: resource files are kilobytes to megabytes.
   */
  static final long MAX_BYTES = 64L * 1024 * 1024;

  enum Format {
    JSON,
    YAML,
    TEXT,
    BINARY
  }

  /** What a file holds: resources of one type. */
  record Contents(TypeUrl type, List<XdsResource> resources) {}

  private ResponseFile() {}

  /** The format a file's name announces; empty for files the source does not read. */
  static Optional<Format> formatOf(Path file) {
    String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
    if (name.startsWith(".")) {
      return Optional.empty();
    } else if (name.endsWith(".json")) {
      return Optional.of(Format.JSON);
    } else if (name.endsWith(".yaml") || name.endsWith(".yml")) {
      return Optional.of(Format.YAML);
    } else if (name.endsWith(".textproto") || name.endsWith(".txtpb") || name.endsWith(".pbtxt")) {
      return Optional.of(Format.TEXT);
    } else if (name.endsWith(".pb") || name.endsWith(".binpb")) {
      return Optional.of(Format.BINARY);
    }
    return Optional.empty();
  }

  /**
   * Reads and checks {@code file}. A response without a type_url takes its type from its first
   * resource (inside its {@code Resource} wrapper, if it has one), as Envoy's example files leave
   * it out.
   *
   * @throws InvalidFileException with a reason a person can act on
   */
  static Contents read(Path file, Format format) throws IOException, InvalidFileException {
    long size = Files.size(file);
    if (size > MAX_BYTES) {
      throw new InvalidFileException(
          size + " bytes is more than the " + MAX_BYTES + " a resource file may have");
    }
    DiscoveryResponse response = parse(Files.readAllBytes(file), format);
    String typeUrl = response.getTypeUrl();
    if (typeUrl.isEmpty()) {
      if (response.getResourcesCount() == 0) {
        throw new InvalidFileException(
            "neither type_url nor resources: the type of the file is unknown");
      }
      typeUrl = typeOf(response.getResources(0));
    }
    TypeUrl type;
    try {
      type = TypeUrl.parse(typeUrl);
    } catch (IllegalArgumentException e) {
      throw new InvalidFileException(e.getMessage());
    }
    try {
      return new Contents(
          type, ResourceDecoder.decode(type, response.getResourcesList()).resources());
    } catch (InvalidResourceException e) {
      throw new InvalidFileException(e.getMessage());
    }
  }

  /** The type of {@code resource}: inside its {@link Resource} wrapper, if it has one. */
  private static String typeOf(Any resource) {
    if (!resource.getTypeUrl().equals(RESOURCE_WRAPPER)) {
      return resource.getTypeUrl();
    }
    try {
      return Resource.parseFrom(resource.getValue()).getResource().getTypeUrl();
    } catch (InvalidProtocolBufferException e) {
      return resource.getTypeUrl(); // refused for its type, with the decoder's words for it
    }
  }

  private static final String RESOURCE_WRAPPER =
      TypeUrl.PREFIX + Resource.getDescriptor().getFullName();

  private static DiscoveryResponse parse(byte[] bytes, Format format) throws InvalidFileException {
    DiscoveryResponse.Builder response = DiscoveryResponse.newBuilder();
    String text = new String(bytes, StandardCharsets.UTF_8);
    try {
      switch (format) {
        case BINARY -> response.mergeFrom(bytes);
        case JSON -> JsonFormat.parser().usingTypeRegistry(ApiTypes.json()).merge(text, response);
        case YAML ->
            JsonFormat.parser()
                .usingTypeRegistry(ApiTypes.json())
                .merge(yamlToJson(text), response);
        case TEXT ->
            TextFormat.Parser.newBuilder()
                .setTypeRegistry(ApiTypes.text())
                .build()
                .merge(text, response);
      }
    } catch (InvalidProtocolBufferException | TextFormat.ParseException e) {
      throw new InvalidFileException(
          "not a DiscoveryResponse in " + format + ": " + e.getMessage());
    } catch (RuntimeException e) {
      // JsonFormat reports some malformed input (bad numbers, bad JSON syntax) as unchecked
      // exceptions.
      throw new InvalidFileException("not a DiscoveryResponse in " + format + ": " + e);
    }
    return response.build();
  }

  private static String yamlToJson(String yaml) throws InvalidFileException {
    Object tree;
    try {
      tree = new Yaml(new SafeConstructor(new LoaderOptions())).load(yaml);
    } catch (YAMLException e) {
      throw new InvalidFileException("not valid YAML: " + e.getMessage().replace('\n', ' '));
    }
    if (tree != null && !(tree instanceof java.util.Map)) {
      throw new InvalidFileException("the YAML document is not a mapping (a DiscoveryResponse)");
    }
    checkExpansion(
        tree,
        Collections.newSetFromMap(new IdentityHashMap<>()),
        new int[] {4 * yaml.length() + 100_000});
    return new Gson().toJson(tree == null ? java.util.Map.of() : tree);
  }

  /**
   * Refuses a tree that aliases make cyclic ({@code &a [*a]}), which JSON cannot hold and which
   * would recurse without end, or that aliases blow up far past the file's own size ("billion
   * laughs"), before the tree is written out as JSON.
   *
   * @param enclosing the collections {@code node} is inside of
   * @param budget the nodes the expanded tree may still have
   */
  private static void checkExpansion(Object node, Set<Object> enclosing, int[] budget)
      throws InvalidFileException {
    if (--budget[0] < 0) {
      throw new InvalidFileException("YAML aliases expand the document to far more than its size");
    }
    if (!(node instanceof java.util.Map<?, ?>) && !(node instanceof Collection<?>)) {
      return;
    }
    if (!enclosing.add(node)) {
      throw new InvalidFileException(
          "a YAML alias refers to a collection it is inside of: the document is cyclic");
    }
    Collection<?> children =
        node instanceof java.util.Map<?, ?> map ? map.values() : (Collection<?>) node;
    for (Object child : children) {
      checkExpansion(child, enclosing, budget);
    }
    enclosing.remove(node);
  }

  /** A file that cannot be served; the message says why. */
  static final class InvalidFileException extends Exception {
    InvalidFileException(String message) {
      super(message);
    }
  }
}
