package io.xdsproxy.upstream.fs;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.SavedState;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.Versions;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.upstream.fs.ResponseFile.Contents;
import io.xdsproxy.upstream.fs.ResponseFile.InvalidFileException;
import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * One generation of one node group's saved state on disk: a directory a person can serve as it is
 * with {@code --resources-dir} (a DiscoveryResponse file per type, proto3 JSON, each resource in
 * its {@code Resource} wrapper with its name, version and the TTL it had left when written), and a
 * manifest the filesystem source does not read ({@value #MANIFEST}): the format, the group's key,
 * the node the upstream saw, when it was written, and each type's file, completeness, age and
 * checksum.
 *
 * <p>A generation is written whole into a {@code .tmp} directory, each file and the directory
 * flushed to disk, then renamed into place: a crash leaves the previous generation as it was, and
 * at worst a {@code .tmp} directory that the next start deletes.
 */
final class GroupStateFiles {

  /** The format written; a manifest of another is refused rather than guessed at. */
  static final int FORMAT = 1;

  static final String MANIFEST = "xds-proxy-state.properties";

  /** A generation's directory: the group's base name, and a number that grows with each write. */
  private static final Pattern GENERATION = Pattern.compile("([A-Za-z0-9_-]+)\\.g(\\d+)(\\.tmp)?");

  private static final JsonFormat.Printer JSON =
      JsonFormat.printer().usingTypeRegistry(ApiTypes.json());

  private GroupStateFiles() {}

  /**
   * What a generation holds.
   *
   * @param key the node group
   * @param upstreamNode the node the upstream saw for it
   * @param proxyVersion the proxy that wrote it
   * @param state its types, each resource's TTL what was left of it at {@link SavedState#writtenAt}
   */
  record Generation(NodeGroupKey key, Node upstreamNode, String proxyVersion, SavedState state) {}

  /** Why a generation cannot be served; the metric's label. */
  enum Reason {
    /** Missing, truncated or changed files, or contents that do not parse. */
    CORRUPT,
    /** Written in a format this proxy does not read. */
    FORMAT,
    /** Its group key is missing, or not the key its directory is named for. */
    KEY,
    /** The files could not be read at all. */
    IO;

    String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** A generation that cannot be served: its directory or file, and why. */
  static final class InvalidStateException extends Exception {
    final Reason reason;

    InvalidStateException(Reason reason, Path where, String message) {
      super(where + ": " + message);
      this.reason = reason;
    }
  }

  /** The directory name of a generation's group, safe for any key: readable part and a hash. */
  static String baseName(NodeGroupKey key) {
    String readable = key.value().replaceAll("[^A-Za-z0-9_-]", "_");
    if (readable.length() > 40) {
      readable = readable.substring(0, 40);
    }
    MessageDigest digest = sha256();
    digest.update(key.value().getBytes(StandardCharsets.UTF_8));
    return readable + "-" + HexFormat.of().formatHex(digest.digest(), 0, 6);
  }

  /** A name in the state directory, as a generation: its base, number, and whether unfinished. */
  record Name(String base, long generation, boolean unfinished) {
    static Optional<Name> of(Path entry) {
      Matcher matcher = GENERATION.matcher(entry.getFileName().toString());
      if (!matcher.matches()) {
        return Optional.empty();
      }
      try {
        return Optional.of(
            new Name(matcher.group(1), Long.parseLong(matcher.group(2)), matcher.group(3) != null));
      } catch (NumberFormatException e) {
        return Optional.empty();
      }
    }

    String directory() {
      return base + ".g" + generation + (unfinished ? ".tmp" : "");
    }
  }

  /**
   * Writes {@code generation} as generation {@code number} of its group in {@code parent}, and
   * returns its directory. Resources marked do_not_cache are never written (invariant 3); the
   * caller leaves out Secrets unless they are to be kept, in which case {@code secret} makes every
   * file readable by the proxy's user alone.
   */
  static Path write(Path parent, Generation generation, long number, boolean secret)
      throws IOException {
    String base = baseName(generation.key());
    Path tmp = parent.resolve(new Name(base, number, true).directory());
    Path done = parent.resolve(new Name(base, number, false).directory());
    deleteTree(tmp);
    if (secret) {
      Files.createDirectory(tmp, ownerOnly("rwx------"));
    } else {
      Files.createDirectory(tmp);
    }
    Ordered manifest = new Ordered();
    manifest.setProperty("format", Integer.toString(FORMAT));
    manifest.setProperty("group", generation.key().value());
    manifest.setProperty("proxy_version", generation.proxyVersion());
    manifest.setProperty("written_at", generation.state().writtenAt().toString());
    manifest.setProperty(
        "upstream_node",
        JsonFormat.printer().omittingInsignificantWhitespace().print(generation.upstreamNode()));
    manifest.setProperty("types", Integer.toString(generation.state().types().size()));
    int index = 0;
    for (Map.Entry<TypeUrl, SavedState.Type> entry :
        new java.util.TreeMap<>(generation.state().types()).entrySet()) {
      TypeUrl type = entry.getKey();
      SavedState.Type saved = entry.getValue();
      DiscoveryResponse.Builder response = DiscoveryResponse.newBuilder().setTypeUrl(type.url());
      List<XdsResource> resources = new ArrayList<>();
      for (XdsResource resource : saved.resources()) {
        if (!resource.doNotCache()) {
          resources.add(resource);
          response.addResources(Any.pack(resource.toResource()));
        }
      }
      response.setVersionInfo(Versions.ofResources(resources));
      String file;
      byte[] bytes;
      try {
        bytes = (JSON.print(response) + "\n").getBytes(StandardCharsets.UTF_8);
        file = type.shortName() + ".json";
      } catch (InvalidProtocolBufferException noSchema) {
        // A type the proxy has no schema for has no JSON form: its file is binary.
        bytes = response.build().toByteArray();
        file = type.shortName() + ".pb";
      }
      writeSynced(tmp.resolve(file), bytes, secret);
      String prefix = "type." + index++ + ".";
      manifest.setProperty(prefix + "url", type.url());
      manifest.setProperty(prefix + "file", file);
      manifest.setProperty(prefix + "complete", Boolean.toString(saved.complete()));
      manifest.setProperty(prefix + "saved_at", saved.savedAt().toString());
      manifest.setProperty(prefix + "resources", Integer.toString(resources.size()));
      manifest.setProperty(prefix + "sha256", HexFormat.of().formatHex(sha256().digest(bytes)));
    }
    StringWriter text = new StringWriter();
    manifest.store(
        text,
        " xds-proxy: the last good state of node group "
            + generation.key()
            + "; serve it with --resources-dir <this directory>");
    // Last: a generation with a manifest has every file its manifest names.
    writeSynced(tmp.resolve(MANIFEST), text.toString().getBytes(StandardCharsets.UTF_8), secret);
    sync(tmp);
    Files.move(tmp, done, StandardCopyOption.ATOMIC_MOVE);
    sync(parent);
    return done;
  }

  /**
   * Reads the generation in {@code directory}, checking what a torn write, a disk error or another
   * proxy version could have left.
   */
  static Generation read(Path directory) throws InvalidStateException {
    Path manifestFile = directory.resolve(MANIFEST);
    Properties manifest = new Properties();
    try {
      manifest.load(new StringReader(Files.readString(manifestFile, StandardCharsets.UTF_8)));
    } catch (NoSuchFileException e) {
      throw new InvalidStateException(Reason.CORRUPT, manifestFile, "missing");
    } catch (IOException | IllegalArgumentException e) {
      throw new InvalidStateException(
          e instanceof IOException && !(e instanceof java.nio.charset.CharacterCodingException)
              ? Reason.IO
              : Reason.CORRUPT,
          manifestFile,
          "cannot be read: " + e.getMessage());
    }
    String format = manifest.getProperty("format", "");
    if (!format.equals(Integer.toString(FORMAT))) {
      throw new InvalidStateException(
          format.matches("\\d+") ? Reason.FORMAT : Reason.CORRUPT,
          manifestFile,
          "format '"
              + format
              + "' (written by xds-proxy "
              + manifest.getProperty("proxy_version", "of unknown version")
              + "); this proxy reads format "
              + FORMAT);
    }
    String group = manifest.getProperty("group", "");
    if (group.isBlank()) {
      throw new InvalidStateException(Reason.KEY, manifestFile, "no node group key");
    }
    NodeGroupKey key = new NodeGroupKey(group);
    Optional<Name> name = Name.of(directory);
    if (name.isEmpty() || !name.get().base().equals(baseName(key))) {
      throw new InvalidStateException(
          Reason.KEY,
          manifestFile,
          "the node group key '" + group + "' is not the one its directory is named for");
    }
    Instant writtenAt = instant(manifest, "written_at", manifestFile);
    Node.Builder node = Node.newBuilder();
    try {
      JsonFormat.parser().merge(manifest.getProperty("upstream_node", "{}"), node);
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      throw new InvalidStateException(
          Reason.CORRUPT, manifestFile, "upstream_node is not a Node: " + e.getMessage());
    }
    int count = number(manifest, "types", manifestFile);
    Map<TypeUrl, SavedState.Type> types = new LinkedHashMap<>();
    for (int i = 0; i < count; i++) {
      String prefix = "type." + i + ".";
      TypeUrl type;
      try {
        type = TypeUrl.parse(manifest.getProperty(prefix + "url", ""));
      } catch (IllegalArgumentException e) {
        throw new InvalidStateException(Reason.CORRUPT, manifestFile, prefix + "url: " + e);
      }
      String fileName = manifest.getProperty(prefix + "file", "");
      Path file = directory.resolve(fileName);
      if (fileName.isEmpty() || !file.getParent().equals(directory)) {
        throw new InvalidStateException(
            Reason.CORRUPT, manifestFile, prefix + "file '" + fileName + "' is not a file name");
      }
      byte[] bytes;
      try {
        bytes = Files.readAllBytes(file);
      } catch (NoSuchFileException e) {
        throw new InvalidStateException(Reason.CORRUPT, file, "missing");
      } catch (IOException e) {
        throw new InvalidStateException(Reason.IO, file, "cannot be read: " + e.getMessage());
      }
      if (!HexFormat.of()
          .formatHex(sha256().digest(bytes))
          .equals(manifest.getProperty(prefix + "sha256"))) {
        throw new InvalidStateException(
            Reason.CORRUPT,
            file,
            "its checksum is not the manifest's: truncated or changed since it was written");
      }
      Contents contents;
      try {
        contents =
            ResponseFile.read(
                file,
                ResponseFile.formatOf(file)
                    .orElseThrow(() -> new InvalidFileException("not a resource file name")));
      } catch (InvalidFileException e) {
        throw new InvalidStateException(Reason.CORRUPT, file, e.getMessage());
      } catch (IOException e) {
        throw new InvalidStateException(Reason.IO, file, "cannot be read: " + e.getMessage());
      }
      if (!contents.type().equals(type)
          || contents.resources().size() != number(manifest, prefix + "resources", manifestFile)) {
        throw new InvalidStateException(
            Reason.CORRUPT, file, "does not hold what the manifest says it does");
      }
      types.put(
          type,
          new SavedState.Type(
              instant(manifest, prefix + "saved_at", manifestFile),
              contents.resources(),
              Boolean.parseBoolean(manifest.getProperty(prefix + "complete"))));
    }
    return new Generation(
        key,
        node.build(),
        manifest.getProperty("proxy_version", ""),
        new SavedState(writtenAt, types));
  }

  /** Deletes {@code directory} and what it holds, if it is there. */
  static void deleteTree(Path directory) throws IOException {
    if (!Files.exists(directory)) {
      return;
    }
    List<Path> inside;
    try (Stream<Path> walk = Files.walk(directory)) {
      inside = new ArrayList<>(walk.toList());
    }
    Collections.reverse(inside);
    for (Path path : inside) {
      Files.deleteIfExists(path);
    }
  }

  private static Instant instant(Properties manifest, String name, Path file)
      throws InvalidStateException {
    return read(manifest, name, file, Instant::parse, "a time");
  }

  private static int number(Properties manifest, String name, Path file)
      throws InvalidStateException {
    return read(manifest, name, file, Integer::parseInt, "a number");
  }

  /** The manifest's {@code name} as {@code parse} reads it; CORRUPT when it is not {@code what}. */
  private static <T> T read(
      Properties manifest, String name, Path file, Function<String, T> parse, String what)
      throws InvalidStateException {
    try {
      return parse.apply(manifest.getProperty(name, ""));
    } catch (RuntimeException e) {
      throw new InvalidStateException(Reason.CORRUPT, file, name + " is not " + what);
    }
  }

  /** Writes {@code bytes} to a new {@code file} and flushes it to the disk. */
  private static void writeSynced(Path file, byte[] bytes, boolean secret) throws IOException {
    Set<OpenOption> options = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    FileAttribute<?>[] attributes =
        secret ? new FileAttribute<?>[] {ownerOnly("rw-------")} : new FileAttribute<?>[0];
    try (FileChannel channel = FileChannel.open(file, options, attributes)) {
      ByteBuffer buffer = ByteBuffer.wrap(bytes);
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
      channel.force(true);
    } catch (FileAlreadyExistsException e) {
      throw new IOException(file + " exists already in a directory just made", e);
    }
  }

  /** Flushes a directory's entries to the disk, where the platform can (Linux can). */
  static void sync(Path directory) throws IOException {
    try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
      channel.force(true);
    } catch (IOException e) {
      if (!System.getProperty("os.name", "").startsWith("Windows")) {
        throw e;
      }
    }
  }

  private static FileAttribute<?> ownerOnly(String permissions) {
    return PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString(permissions));
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }

  /** Properties written in the order they were set, so that the manifest reads top to bottom. */
  private static final class Ordered extends Properties {
    private final Map<Object, Object> order = new LinkedHashMap<>();

    @Override
    public synchronized Object put(Object key, Object value) {
      order.put(key, value);
      return super.put(key, value);
    }

    @Override
    public Set<Map.Entry<Object, Object>> entrySet() {
      return Collections.synchronizedSet(new LinkedHashSet<>(order.entrySet()));
    }
  }
}
