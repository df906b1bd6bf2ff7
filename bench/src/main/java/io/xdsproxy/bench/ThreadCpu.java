package io.xdsproxy.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;

/**
 * A process's CPU time by what its threads do, read from {@code /proc/PID/task/*}: the server's own
 * work, its Netty event loops, the JIT compiler, the garbage collector. A process's total CPU per
 * update says how far it is from another; this says where the difference is, without a profiler's
 * overhead or its sampling noise.
 *
 * <p>A thread is placed by its name as the kernel keeps it (the first 15 characters). A thread that
 * ends between two readings takes its time with it; the servers measured here keep their threads.
 */
final class ThreadCpu {

  /** What a thread does, by its name. */
  enum Role {
    /** The server's own threads: xds-proxy's workers, the floor's writers (and readers). */
    WORKERS("the server's workers"),
    /**
     * Netty's event loops of the port clients connect to: reading, writing, HTTP/2, gRPC framing.
     */
    EVENT_LOOPS("the xDS port's event loops"),
    /** C1 and C2. */
    JIT("the JIT compiler"),
    /** G1's threads and the VM thread, which runs the pauses. */
    GC("the GC and the VM thread"),
    /** Everything else: timers, the upstream's event loop, the JVM's service threads. */
    OTHER("other threads");

    final String description;

    Role(String description) {
      this.description = description;
    }

    static Role of(String name) {
      if (name.startsWith("xds-proxy-worke") || name.startsWith("floor-")) {
        return WORKERS;
      }
      if (name.startsWith("xds-server-") || name.startsWith("grpc-nio-")) {
        return EVENT_LOOPS;
      }
      if (name.startsWith("C1 Compiler") || name.startsWith("C2 Compiler")) {
        return JIT;
      }
      if (name.startsWith("GC Thread") || name.startsWith("G1 ") || name.equals("VM Thread")) {
        return GC;
      }
      return OTHER;
    }
  }

  private record Thread(Role role, long ticks) {}

  private final Map<Long, Thread> threads;

  private ThreadCpu(Map<Long, Thread> threads) {
    this.threads = threads;
  }

  /** Every live thread of process {@code pid} and its CPU time so far. */
  static ThreadCpu of(long pid) {
    Map<Long, Thread> threads = new HashMap<>();
    try (DirectoryStream<Path> tasks =
        Files.newDirectoryStream(Path.of("/proc/" + pid + "/task"))) {
      for (Path task : tasks) {
        try {
          String name = Files.readString(task.resolve("comm")).strip();
          threads.put(
              Long.parseLong(task.getFileName().toString()),
              new Thread(Role.of(name), ticks(task.resolve("stat"))));
        } catch (NoSuchFileException ended) {
          // the thread ended while the directory was read
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new ThreadCpu(threads);
  }

  /** User and system CPU time in a process's or a thread's {@code stat} file, in clock ticks. */
  static long ticks(Path stat) throws IOException {
    String line = Files.readString(stat);
    String[] fields = line.substring(line.lastIndexOf(')') + 2).split(" ");
    // After the command: state is field 3 of stat, utime 14 and stime 15, so 11 and 12 here.
    return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
  }

  /**
   * Seconds of CPU spent by each role since {@code before}; a thread started since counts from
   * zero.
   */
  Map<Role, Double> since(ThreadCpu before) {
    Map<Role, Double> seconds = new EnumMap<>(Role.class);
    for (Role role : Role.values()) {
      seconds.put(role, 0.0);
    }
    threads.forEach(
        (tid, now) -> {
          Thread then = before.threads.get(tid);
          long spent = now.ticks() - (then == null ? 0 : then.ticks());
          seconds.merge(now.role(), spent / (double) JavaProcess.TICKS_PER_SECOND, Double::sum);
        });
    return seconds;
  }
}
