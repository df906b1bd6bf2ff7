package io.xdsproxy.upstream.fs;

import static java.nio.file.StandardWatchEventKinds.ENTRY_CREATE;
import static java.nio.file.StandardWatchEventKinds.ENTRY_DELETE;
import static java.nio.file.StandardWatchEventKinds.ENTRY_MODIFY;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.Interest;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.upstream.fs.ResponseFile.Contents;
import io.xdsproxy.upstream.fs.ResponseFile.Format;
import io.xdsproxy.upstream.fs.ResponseFile.InvalidFileException;
import java.io.IOException;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.WatchService;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A directory of DiscoveryResponse files served as the upstream: the proxy's embedded default, and
 * the spec's filesystem subscription. Every node group gets the same resources. What a type holds
 * is the union of the files of that type.
 *
 * <p>The directory is watched: an edit, a new file or a removed file reaches every group within a
 * second (inotify where the platform has it, and a rescan every {@link #RESCAN} regardless, which
 * also catches Kubernetes ConfigMap symlink swaps). A file that does not parse is logged with its
 * path and the reason, and the last good contents of that file stay served: there is no way to NACK
 * a file ("Filesystem subscriptions").
 *
 * <p>All state is confined to one thread, the source's own.
 */
public final class FileSystemSource implements UpstreamSource {

  private static final Logger log = LoggerFactory.getLogger(FileSystemSource.class);
  static final Duration RESCAN = Duration.ofMillis(500);

  /** Scans of one rescan before the directory is taken as it is, should it never hold still. */
  private static final int MAX_SCANS = 5;

  private final Path directory;
  private final ScheduledExecutorService thread;
  private final WatchService watcher;

  // Confined to the source's thread.
  private final Map<Path, FileState> files = new TreeMap<>();
  private Map<TypeUrl, List<XdsResource>> served = Map.of();
  private final Set<Session> sessions = new HashSet<>();

  /**
   * Reads {@code directory} and starts watching it.
   *
   * @throws IOException when the directory cannot be read at all
   */
  public FileSystemSource(Path directory) throws IOException {
    if (!Files.isDirectory(directory)) {
      throw new IOException(
          "resources directory " + directory + " does not exist or is not a directory");
    }
    this.directory = directory;
    this.thread =
        Executors.newSingleThreadScheduledExecutor(
            task -> {
              Thread t = new Thread(task, "xds-proxy-fs-source");
              t.setDaemon(true);
              return t;
            });
    this.watcher = directory.getFileSystem().newWatchService();
    directory.register(watcher, ENTRY_CREATE, ENTRY_MODIFY, ENTRY_DELETE);
    try {
      thread.submit(this::rescan).get();
    } catch (Exception e) {
      throw new IOException(
          "cannot read resources directory " + directory + ": " + e.getMessage(), e);
    }
    thread.scheduleWithFixedDelay(
        this::rescan, RESCAN.toMillis(), RESCAN.toMillis(), TimeUnit.MILLISECONDS);
    Thread events = new Thread(this::watchEvents, "xds-proxy-fs-watch");
    events.setDaemon(true);
    events.start();
  }

  @Override
  public UpstreamSession open(
      NodeGroupKey group, Node node, String tenant, UpstreamListener listener) {
    Session session = new Session(listener);
    thread.execute(
        () -> {
          sessions.add(session);
          List<ResourceUpdate> everything = new ArrayList<>();
          served.forEach(
              (type, resources) -> everything.add(ResourceUpdate.complete(type, resources)));
          listener.onUpdates(everything);
        });
    return session;
  }

  /** A directory is there from the start: the constructor read it. */
  @Override
  public boolean reached() {
    return true;
  }

  @Override
  public String describe() {
    return "resources directory " + directory;
  }

  @Override
  public void close() {
    thread.shutdownNow();
    try {
      watcher.close();
    } catch (IOException e) {
      log.debug("closing the watch service of {}: {}", directory, e.toString());
    }
  }

  /**
   * Waits for inotify's word that something changed, and rescans at once rather than at the next
   * tick.
   */
  private void watchEvents() {
    try {
      while (true) {
        var key = watcher.take();
        key.pollEvents();
        key.reset();
        thread.execute(this::rescan);
      }
    } catch (InterruptedException | ClosedWatchServiceException e) {
      // The source is closed.
    } catch (RuntimeException e) {
      log.warn(
          "watching {} stopped ({}); changes are still picked up every {} ms",
          directory,
          e,
          RESCAN.toMillis());
    }
  }

  private void rescan() {
    try {
      Map<Path, FileState> seen = scan();
      // A file replaced while the scan read the others (a ConfigMap's atomic swap of every file)
      // would mix old and new: read again until the directory holds still.
      for (int attempt = 1; attempt < MAX_SCANS && !unchanged(seen); attempt++) {
        seen = scan();
      }
      boolean changed = !seen.keySet().equals(files.keySet());
      for (Map.Entry<Path, FileState> entry : seen.entrySet()) {
        changed |= files.get(entry.getKey()) != entry.getValue();
      }
      if (!changed) {
        return;
      }
      Map<Path, FileState> current = seen;
      files.keySet().stream()
          .filter(file -> !current.containsKey(file))
          .forEach(file -> log.info("resources file {} removed", file));
      files.clear();
      files.putAll(seen);
      publish();
    } catch (IOException | RuntimeException e) {
      log.warn(
          "cannot scan resources directory {}: {}; the last good state stays",
          directory,
          e.toString());
    }
  }

  private Map<Path, FileState> scan() throws IOException {
    Map<Path, FileState> seen = new HashMap<>();
    for (Path file : listFiles()) {
      seen.put(file, reread(file, ResponseFile.formatOf(file).orElseThrow()));
    }
    return seen;
  }

  /** The resource files in the directory now. */
  private List<Path> listFiles() throws IOException {
    try (Stream<Path> listing = Files.list(directory)) {
      return listing
          .filter(file -> ResponseFile.formatOf(file).isPresent() && Files.isRegularFile(file))
          .toList();
    }
  }

  /** Whether the directory still holds exactly the files of {@code seen}, as they were read. */
  private boolean unchanged(Map<Path, FileState> seen) throws IOException {
    List<Path> now = listFiles();
    if (now.size() != seen.size()) {
      return false;
    }
    for (Path file : now) {
      FileState state = seen.get(file);
      if (state == null || !state.stamp().equals(Stamp.of(file))) {
        return false;
      }
    }
    return true;
  }

  /** The file's state, read again only if it is not the file last read. */
  private FileState reread(Path file, Format format) throws IOException {
    Stamp stamp = Stamp.of(file);
    FileState previous = files.get(file);
    if (previous != null && previous.stamp().equals(stamp)) {
      return previous;
    }
    Optional<Contents> good = previous == null ? Optional.empty() : previous.good();
    try {
      Contents contents = ResponseFile.read(file, format);
      log.info(
          "resources file {}: {} {} resource(s)",
          file,
          contents.resources().size(),
          contents.type().shortName());
      good = Optional.of(contents);
    } catch (InvalidFileException | IOException e) {
      log.warn(
          "resources file {} is not served: {}; {}",
          file,
          e.getMessage(),
          good.isPresent() ? "its last good contents stay" : "it had no good contents yet");
    }
    return new FileState(stamp, good);
  }

  /** Tells every session about each type whose union of files changed. */
  private void publish() {
    Map<TypeUrl, Map<String, XdsResource>> byType = new TreeMap<>();
    Map<String, Path> origin = new HashMap<>();
    files.forEach(
        (file, state) ->
            state
                .good()
                .ifPresent(
                    contents -> {
                      Map<String, XdsResource> resources =
                          byType.computeIfAbsent(contents.type(), t -> new LinkedHashMap<>());
                      for (XdsResource resource : contents.resources()) {
                        String key = contents.type() + "/" + resource.name();
                        Path first = origin.putIfAbsent(key, file);
                        if (first == null) {
                          resources.put(resource.name(), resource);
                        } else if (!first.equals(file)) {
                          log.warn(
                              "{} '{}' is in both {} and {}; the one in {} is served",
                              contents.type().shortName(),
                              resource.name(),
                              first,
                              file,
                              first);
                        }
                      }
                    }));
    Map<TypeUrl, List<XdsResource>> next = new TreeMap<>();
    byType.forEach((type, resources) -> next.put(type, List.copyOf(resources.values())));
    Set<TypeUrl> types = new HashSet<>(served.keySet());
    types.addAll(next.keySet());
    List<ResourceUpdate> updates = new ArrayList<>();
    for (TypeUrl type : types) {
      List<XdsResource> resources = next.getOrDefault(type, List.of());
      if (!Objects.equals(served.get(type), next.get(type))) {
        updates.add(ResourceUpdate.complete(type, resources));
      }
    }
    served = next;
    if (!updates.isEmpty()) {
      for (Session session : sessions) {
        session.listener.onUpdates(updates);
      }
    }
  }

  /**
   * What tells one version of a file from another: its inode (a swapped symlink changes it), time
   * and size.
   */
  private record Stamp(Object fileKey, FileTime modified, long size) {
    static Stamp of(Path file) throws IOException {
      BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
      return new Stamp(attributes.fileKey(), attributes.lastModifiedTime(), attributes.size());
    }
  }

  private record FileState(Stamp stamp, Optional<Contents> good) {}

  /** A node group's view: everything in the directory, whatever it asks for. */
  private final class Session implements UpstreamSession {
    private final UpstreamListener listener;

    Session(UpstreamListener listener) {
      this.listener = listener;
    }

    @Override
    public void updateInterest(TypeUrl type, Interest interest) {
      // Every resource is served already: a directory answers every name at once.
    }

    @Override
    public void refetch(TypeUrl type) {
      thread.execute(
          () ->
              listener.onUpdate(
                  ResourceUpdate.complete(type, served.getOrDefault(type, List.of()))));
    }

    @Override
    public void close() {
      try {
        thread.execute(() -> sessions.remove(this));
      } catch (RejectedExecutionException e) {
        // The source is closed already: no session is served any more.
      }
    }
  }
}
