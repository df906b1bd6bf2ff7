package io.xdsproxy.upstream.fs;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.xdsproxy.core.LogFields;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.SavedState;
import io.xdsproxy.core.SavedStates;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.upstream.fs.GroupStateFiles.Generation;
import io.xdsproxy.upstream.fs.GroupStateFiles.InvalidStateException;
import io.xdsproxy.upstream.fs.GroupStateFiles.Name;
import io.xdsproxy.upstream.fs.GroupStateFiles.Reason;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code --state-dir}: each node group's last good state, kept on disk so that a proxy restarted
 * while its control plane is unreachable still has something to serve ("fail-static"). At start
 * every group's newest good generation ({@link GroupStateFiles}) is found; a group opened later is
 * served it until its upstream answers. Every change the upstream makes is saved again, at most
 * once a second per group, on one thread of its own: disk latency never reaches a group or a
 * stream. What cannot be read (truncated, corrupt, another format, a key that is not its
 * directory's) is logged with its file and the reason, counted, and never served.
 *
 * <p>Threads: {@link #load} and {@link #changed} run on the group's executor and only read the
 * index or record what to write; the writing thread reads the groups' immutable snapshots.
 */
public final class StateDir implements SavedStates, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(StateDir.class);

  /** A burst of updates costs at most one write per group in this time. */
  static final Duration WRITE_SPACING = Duration.ofSeconds(1);

  private final Path directory;
  private final boolean includeSecrets;
  private final Clock clock;
  private final Duration confirmTimeout;
  private final String proxyVersion;
  private final ScheduledThreadPoolExecutor writer;

  /** Each group's newest good generation on disk. */
  private final Map<NodeGroupKey, Path> generations = new ConcurrentHashMap<>();

  /** What is known of each group's state to write. */
  private final Map<NodeGroupKey, Pending> pending = new ConcurrentHashMap<>();

  /** When the newest state found at start was written; empty if none was. */
  private final Optional<Instant> foundWrittenAt;

  private final AtomicLong nextGeneration = new AtomicLong(1);
  private final Counter writes;
  private final Counter writeFailures;
  private final Map<Reason, Counter> loadFailures = new EnumMap<>(Reason.class);

  /**
   * Opens {@code directory}, made if it is not there, and finds the groups saved in it.
   *
   * @param includeSecrets whether Secrets are saved too (their files readable by the proxy's user
   *     alone); else they are neither saved nor served from what an earlier run saved
   * @param confirmTimeout how long a saved resource may stay after its upstream answered its type
   *     without it: the upstream's not-found timeout
   * @throws IOException when the directory cannot be made or listed
   */
  public StateDir(
      Path directory,
      boolean includeSecrets,
      Clock clock,
      Duration confirmTimeout,
      String proxyVersion,
      MeterRegistry meters)
      throws IOException {
    this.directory = directory;
    this.includeSecrets = includeSecrets;
    this.clock = clock;
    this.confirmTimeout = confirmTimeout;
    this.proxyVersion = proxyVersion;
    writes =
        Counter.builder("xds.state.writes")
            .description("Node group states written to the state directory")
            .register(meters);
    writeFailures =
        Counter.builder("xds.state.write.failures")
            .description("Node group states that could not be written to the state directory")
            .register(meters);
    for (Reason reason : Reason.values()) {
      loadFailures.put(
          reason,
          Counter.builder("xds.state.load.failures")
              .description(
                  "Saved node group states not served, by reason: corrupt, format, key, io")
              .tag("reason", reason.label())
              .register(meters));
    }
    try {
      Files.createDirectories(directory);
    } catch (IOException e) {
      throw new IOException("cannot make state directory " + directory + ": " + e, e);
    }
    if (!Files.isDirectory(directory) || !Files.isWritable(directory)) {
      throw new IOException("state directory " + directory + " is not a writable directory");
    }
    foundWrittenAt = scan();
    writer =
        new ScheduledThreadPoolExecutor(
            1,
            task -> {
              Thread thread = new Thread(task, "xds-proxy-state-writer");
              thread.setDaemon(true);
              return thread;
            });
    // A write still waiting at close is done by the flush instead.
    writer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
  }

  /** Where the states are kept. */
  public Path directory() {
    return directory;
  }

  /**
   * When the newest state found at start was written, if one was: a replica that has it can serve
   * clients before its upstream has answered.
   */
  public Optional<Instant> foundWrittenAt() {
    return foundWrittenAt;
  }

  @Override
  public Duration confirmTimeout() {
    return confirmTimeout;
  }

  /**
   * Finds every group's newest generation that reads, and deletes what an interrupted write left.
   */
  private Optional<Instant> scan() throws IOException {
    Map<String, List<Name>> byBase = new HashMap<>();
    try (Stream<Path> entries = Files.list(directory)) {
      for (Path entry : entries.toList()) {
        Optional<Name> name = Name.of(entry);
        if (name.isEmpty() || !Files.isDirectory(entry)) {
          continue; // not the proxy's (lost+found on a volume, say)
        }
        nextGeneration.accumulateAndGet(name.get().generation() + 1, Math::max);
        if (name.get().unfinished()) {
          log.info("state directory: {} is what an interrupted write left; deleted", entry);
          GroupStateFiles.deleteTree(entry);
        } else {
          byBase.computeIfAbsent(name.get().base(), b -> new ArrayList<>()).add(name.get());
        }
      }
    }
    Instant newest = null;
    for (List<Name> names : byBase.values()) {
      names.sort(Comparator.comparingLong(Name::generation).reversed());
      for (Name name : names) {
        Path generation = directory.resolve(name.directory());
        Optional<Generation> read = read(generation);
        if (read.isPresent()) {
          NodeGroupKey key = read.get().key();
          generations.put(key, generation);
          Instant writtenAt = read.get().state().writtenAt();
          newest = newest == null || writtenAt.isAfter(newest) ? writtenAt : newest;
          LogFields.NONE
              .group(key)
              .addTo(log.atInfo())
              .log(
                  "state directory: node group {} saved at {} in {} ({} type(s))",
                  key,
                  writtenAt,
                  generation,
                  read.get().state().types().size());
          break;
        }
      }
    }
    return Optional.ofNullable(newest);
  }

  /** The generation in {@code directory}, or empty, logged and counted, if it cannot be served. */
  private Optional<Generation> read(Path generation) {
    try {
      return Optional.of(GroupStateFiles.read(generation));
    } catch (InvalidStateException e) {
      log.warn("state directory: {}; this saved state is not served", e.getMessage());
      loadFailures.get(e.reason).increment();
      return Optional.empty();
    }
  }

  @Override
  public Optional<SavedState> load(NodeGroupKey key) {
    Path generation = generations.get(key);
    if (generation == null) {
      return Optional.empty();
    }
    Optional<Generation> read = read(generation);
    if (read.isEmpty()) {
      return Optional.empty();
    }
    SavedState state = read.get().state();
    Instant now = clock.instant();
    Duration age = Duration.between(state.writtenAt(), now);
    Pending record = pending(key);
    Map<TypeUrl, SavedState.Type> types = new HashMap<>();
    int expired = 0;
    for (Map.Entry<TypeUrl, SavedState.Type> entry : state.types().entrySet()) {
      if (entry.getKey().equals(TypeUrl.SECRET) && !includeSecrets) {
        continue;
      }
      List<XdsResource> resources = new ArrayList<>();
      for (XdsResource resource : entry.getValue().resources()) {
        if (resource.ttl().isEmpty()) {
          resources.add(resource);
          continue;
        }
        // "TTL": what was left of it when written, less the time since.
        Duration left =
            Duration.ofSeconds(resource.ttl().get().getSeconds(), resource.ttl().get().getNanos())
                .minus(age);
        if (left.isNegative() || left.isZero()) {
          expired++;
          continue;
        }
        resources.add(withTtl(resource, left));
        record.deadlines.put(entry.getKey().url() + "/" + resource.name(), now.plus(left));
      }
      SavedState.Type saved = entry.getValue();
      types.put(entry.getKey(), new SavedState.Type(saved.savedAt(), resources, saved.complete()));
    }
    if (expired > 0) {
      LogFields.NONE
          .group(key)
          .addTo(log.atInfo())
          .log(
              "state directory: {} saved resource(s) of node group {} outlived their TTL; not"
                  + " served",
              expired,
              key);
    }
    return Optional.of(new SavedState(state.writtenAt(), types));
  }

  @Override
  public void changed(NodeGroup group, List<ResourceUpdate> updates) {
    Pending record = pending(group.key());
    record.group = group;
    Instant now = clock.instant();
    for (ResourceUpdate update : updates) {
      for (XdsResource resource : update.resources()) {
        resource
            .ttl()
            .ifPresent(
                ttl ->
                    record.deadlines.put(
                        update.type().url() + "/" + resource.name(), after(now, ttl)));
      }
      if (!update.heartbeats().isEmpty()) {
        TypeSnapshot snapshot = group.snapshot(update.type());
        for (String name : update.heartbeats()) {
          XdsResource resource = snapshot.get(name);
          if (resource != null && resource.ttl().isPresent()) {
            record.deadlines.put(
                update.type().url() + "/" + name, after(now, resource.ttl().get()));
          }
        }
      }
    }
    if (record.scheduled.compareAndSet(false, true)) {
      long wait = Math.max(0, record.lastWrite + WRITE_SPACING.toMillis() - clock.millis());
      try {
        writer.schedule(() -> write(record), wait, TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.RejectedExecutionException closed) {
        record.scheduled.set(false);
      }
    }
  }

  private Pending pending(NodeGroupKey key) {
    return pending.computeIfAbsent(key, k -> new Pending());
  }

  /** Writes the group's current state as its next generation; on the writing thread. */
  private void write(Pending record) {
    if (!record.scheduled.getAndSet(false)) {
      return; // written by the flush at close already
    }
    record.lastWrite = clock.millis();
    NodeGroup group = record.group;
    Instant now = clock.instant();
    Map<TypeUrl, Instant> fromDisk = group.fromDisk();
    Map<TypeUrl, SavedState.Type> types = new HashMap<>();
    List<String> held = new ArrayList<>();
    for (TypeSnapshot snapshot : group.store().snapshots().values()) {
      TypeUrl type = snapshot.type();
      if (!snapshot.isReceived() || type.equals(TypeUrl.SECRET) && !includeSecrets) {
        continue;
      }
      List<XdsResource> resources = new ArrayList<>();
      boolean complete = snapshot.isComplete();
      for (XdsResource resource : snapshot.resources().values()) {
        String id = type.url() + "/" + resource.name();
        held.add(id);
        if (resource.doNotCache()) {
          complete = false; // invariant 3: never kept, so what is kept is not the whole type
          continue;
        }
        if (resource.ttl().isEmpty()) {
          resources.add(resource);
          continue;
        }
        Instant deadline = record.deadlines.get(id);
        Duration left = deadline == null ? null : Duration.between(now, deadline);
        if (left == null) {
          resources.add(resource);
        } else if (!left.isNegative() && !left.isZero()) {
          resources.add(withTtl(resource, left));
        }
      }
      if (!resources.isEmpty() || complete) {
        types.put(type, new SavedState.Type(fromDisk.getOrDefault(type, now), resources, complete));
      }
    }
    record.deadlines.keySet().retainAll(held);
    NodeGroupKey key = group.key();
    try {
      Path written =
          GroupStateFiles.write(
              directory,
              new Generation(key, group.upstreamNode(), proxyVersion, new SavedState(now, types)),
              nextGeneration.getAndIncrement(),
              includeSecrets);
      Path previous = generations.put(key, written);
      writes.increment();
      deleteOtherGenerations(key, written);
      LogFields.NONE
          .group(key)
          .addTo(log.atDebug())
          .log("state directory: node group {} saved in {} (was {})", key, written, previous);
    } catch (IOException | RuntimeException e) {
      writeFailures.increment();
      LogFields.NONE
          .group(key)
          .addTo(log.atWarn())
          .log(
              "state directory: cannot save node group {} in {}: {}; the last state saved stays",
              key,
              directory,
              e.toString());
    }
  }

  /** Deletes the group's generations older than {@code kept}, readable or not. */
  private void deleteOtherGenerations(NodeGroupKey key, Path kept) throws IOException {
    String base = GroupStateFiles.baseName(key);
    long keptNumber = Name.of(kept).orElseThrow().generation();
    try (Stream<Path> entries = Files.list(directory)) {
      for (Path entry : entries.toList()) {
        Optional<Name> name = Name.of(entry);
        if (name.isPresent()
            && name.get().base().equals(base)
            && !name.get().unfinished()
            && name.get().generation() < keptNumber) {
          GroupStateFiles.deleteTree(entry);
        }
      }
    }
  }

  /** Writes what waits to be written, and stops the writing thread. */
  @Override
  public void close() {
    try {
      writer.execute(() -> pending.values().forEach(this::write));
    } catch (java.util.concurrent.RejectedExecutionException closedAlready) {
      return;
    }
    writer.shutdown();
    try {
      if (!writer.awaitTermination(10, TimeUnit.SECONDS)) {
        log.warn("state directory: the last writes to {} did not finish in 10s", directory);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static Instant after(Instant now, com.google.protobuf.Duration ttl) {
    return now.plusSeconds(ttl.getSeconds()).plusNanos(ttl.getNanos());
  }

  private static XdsResource withTtl(XdsResource resource, Duration ttl) {
    return new XdsResource(
        resource.name(),
        resource.version(),
        resource.body(),
        resource.aliases(),
        Optional.of(
            com.google.protobuf.Duration.newBuilder()
                .setSeconds(ttl.getSeconds())
                .setNanos(ttl.getNano())
                .build()),
        resource.doNotCache());
  }

  /** One group's state to write: the group, its TTLs' deadlines, and whether a write waits. */
  private static final class Pending {
    volatile NodeGroup group;

    /** When each resource with a TTL lapses, by type URL and name. */
    final Map<String, Instant> deadlines = new ConcurrentHashMap<>();

    final AtomicBoolean scheduled = new AtomicBoolean();

    /** When the last write began (clock millis); the writing thread's alone. */
    volatile long lastWrite = Long.MIN_VALUE / 2;
  }
}
