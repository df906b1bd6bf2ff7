package io.xdsproxy.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A JVM the benchmark started (the control plane, the proxy) and what the kernel and the JVM say
 * about it: CPU time, resident memory, heap in use after a full GC.
 */
final class JavaProcess implements AutoCloseable {

  private static final Path JAVA = Path.of(ProcessHandle.current().info().command().orElse("java"));

  /**
   * The G1 heap's use in {@code jcmd GC.heap_info}: "heap total 393216K, used 10967K" up to Java
   * 21, "heap total reserved 6172672K, committed 393216K, used 10967K" since.
   */
  static final Pattern HEAP_USED =
      Pattern.compile("heap\\s+total (?:reserved \\d+K, committed )?\\d+K, used (\\d+)K");

  static final long TICKS_PER_SECOND = ticksPerSecond();

  private final String name;
  private final Process process;
  private final PrintWriter input;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

  private JavaProcess(String name, Process process, Path log) {
    this.name = name;
    this.process = process;
    this.input = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
    // The proxy logs to stdout: each line is copied to the log too, appended as the process's
    // stderr is.
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader output =
                      new BufferedReader(
                          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                  Writer copy =
                      Files.newBufferedWriter(
                          log,
                          StandardCharsets.UTF_8,
                          StandardOpenOption.CREATE,
                          StandardOpenOption.APPEND)) {
                for (String line = output.readLine(); line != null; line = output.readLine()) {
                  lines.add(line);
                  copy.write(line + "\n");
                  copy.flush();
                }
              } catch (IOException e) {
                // the process ended
              }
            },
            name + "-output");
    reader.setDaemon(true);
    reader.start();
  }

  /**
   * Starts {@code java JVM_OPTIONS ARGUMENTS}; its stdout and stderr go to {@code log}, which
   * starts empty.
   */
  static JavaProcess start(String name, List<String> jvmOptions, List<String> arguments, Path log)
      throws IOException {
    return start(name, "", jvmOptions, arguments, log);
  }

  /**
   * As {@link #start(String, List, List, Path)}, on the CPUs {@code cpus} only ({@code taskset -c
   * CPUS}, as "0" or "0,1" or "2-3"), or on any when it is empty: so that a benchmark measures what
   * one process does with the cores it has, not how the kernel shares them among all of them.
   */
  static JavaProcess start(
      String name, String cpus, List<String> jvmOptions, List<String> arguments, Path log)
      throws IOException {
    List<String> command = new ArrayList<>();
    if (!cpus.isEmpty()) {
      command.addAll(List.of("taskset", "-c", cpus));
    }
    command.add(JAVA.toString());
    command.addAll(jvmOptions);
    command.addAll(arguments);
    Files.write(log, new byte[0]);
    Process process =
        new ProcessBuilder(command)
            .redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .start();
    return new JavaProcess(name, process, log);
  }

  /**
   * Keeps every thread of this JVM, and those it starts later, on the CPUs {@code cpus} ({@code
   * taskset -a -p -c}); nothing when it is empty.
   */
  static void pinThisProcess(String cpus) throws IOException, InterruptedException {
    if (cpus.isEmpty()) {
      return;
    }
    Process taskset =
        new ProcessBuilder(
                "taskset", "-a", "-p", "-c", cpus, Long.toString(ProcessHandle.current().pid()))
            .redirectErrorStream(true)
            .start();
    String output = new String(taskset.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (taskset.waitFor() != 0) {
      throw new IllegalStateException(
          "taskset could not pin this process to " + cpus + ": " + output);
    }
  }

  /** Whether the process still runs; if not, its exit code. */
  String state() {
    return process.isAlive() ? "running" : "exited with " + process.exitValue();
  }

  boolean alive() {
    return process.isAlive();
  }

  /** Sends a line on the process's stdin. */
  void send(String line) {
    input.println(line);
  }

  /** The next stdout line that holds {@code text}, skipping others. */
  String awaitContaining(String text, Duration timeout) throws InterruptedException {
    return awaitLine(line -> line.contains(text), "no line holding '" + text + "'", timeout);
  }

  /** The next stdout line that starts with {@code prefix}, skipping others. */
  String await(String prefix, Duration timeout) throws InterruptedException {
    return awaitLine(line -> line.startsWith(prefix), "no '" + prefix + "' line", timeout);
  }

  /**
   * The next stdout line that is {@code wanted}, skipping others; fails once {@code timeout} has
   * passed, or at once if the process exits first, saying it printed {@code none}.
   */
  private String awaitLine(Predicate<String> wanted, String none, Duration timeout)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      String line = lines.poll(100, TimeUnit.MILLISECONDS);
      if (line != null && wanted.test(line)) {
        return line;
      }
      if (line == null && !process.isAlive() && lines.isEmpty()) {
        break;
      }
    }
    throw new IllegalStateException(
        name + " printed " + none + " within " + timeout + " (" + state() + ")");
  }

  long pid() {
    return process.pid();
  }

  /** User and system CPU time so far, in seconds. */
  double cpuSeconds() throws IOException {
    return cpuSeconds(pid());
  }

  /** User and system CPU time of this JVM so far, in seconds. */
  static double ownCpuSeconds() throws IOException {
    return cpuSeconds(ProcessHandle.current().pid());
  }

  private static double cpuSeconds(long pid) throws IOException {
    return ThreadCpu.ticks(Path.of("/proc", Long.toString(pid), "stat"))
        / (double) TICKS_PER_SECOND;
  }

  /** Resident set size, in bytes. */
  long rssBytes() throws IOException {
    return status("VmRSS:") * 1024;
  }

  /** Live threads, the JVM's own included. */
  long threads() throws IOException {
    return status("Threads:");
  }

  /** Open file descriptors: sockets, jars, pipes. */
  long openFileDescriptors() throws IOException {
    try (var fds = Files.list(Path.of("/proc", Long.toString(pid()), "fd"))) {
      return fds.count();
    }
  }

  /** The number of a field of /proc/PID/status. */
  private long status(String field) throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid()), "status"))) {
      if (line.startsWith(field)) {
        return Long.parseLong(line.replaceAll("\\D", ""));
      }
    }
    throw new IllegalStateException("no " + field + " for " + name);
  }

  /** Heap in use right after a full collection, in bytes (jcmd GC.run, then GC.heap_info). */
  long heapAfterGcBytes() throws IOException, InterruptedException {
    jcmd("GC.run");
    Matcher used = HEAP_USED.matcher(jcmd("GC.heap_info"));
    if (!used.find()) {
      throw new IllegalStateException("cannot read the heap of " + name);
    }
    return Long.parseLong(used.group(1)) * 1024;
  }

  /**
   * Writes the live objects of this process, by class, largest first ({@code jcmd
   * GC.class_histogram}) to {@code file}.
   */
  void classHistogram(Path file) throws IOException, InterruptedException {
    Files.writeString(file, jcmd("GC.class_histogram"));
  }

  /**
   * Starts a flight recording (JFR, profiling settings) that {@link #stopRecording} writes to
   * {@code file}.
   */
  void startRecording(Path file) throws IOException, InterruptedException {
    jcmd("JFR.start", "name=bench", "settings=profile", "filename=" + file.toAbsolutePath());
  }

  void stopRecording() throws IOException, InterruptedException {
    jcmd("JFR.stop", "name=bench");
  }

  /**
   * Starts async-profiler ({@code library}: its {@code libasyncProfiler.so}) in this process,
   * sampling CPU time of every thread, the JVM's own (GC, JIT) and native frames included, which a
   * flight recording does not see.
   */
  void startProfiler(Path library) throws IOException, InterruptedException {
    profilerCommand(library, "start,event=cpu,interval=1ms");
  }

  /**
   * Stops async-profiler and writes its samples to {@code base}.collapsed and its hottest stacks
   * and methods to {@code base}.txt.
   */
  void stopProfiler(Path library, Path base) throws IOException, InterruptedException {
    String path = base.toAbsolutePath().toString();
    profilerCommand(library, "stop,file=" + path + ".txt,traces=30,flat=40");
    profilerCommand(library, "dump,file=" + path + ".collapsed,collapsed");
  }

  private void profilerCommand(Path library, String command)
      throws IOException, InterruptedException {
    // Quoted: jcmd would take the '=' of an unquoted option for one of its own.
    String output =
        jcmd("JVMTI.agent_load", library.toAbsolutePath().toString(), '"' + command + '"');
    if (output.contains("[ERROR]") || !output.contains("return code: 0")) {
      throw new IllegalStateException(
          "async-profiler in " + name + " refused " + command + ": " + output);
    }
  }

  private String jcmd(String... command) throws IOException, InterruptedException {
    List<String> line =
        new ArrayList<>(List.of(JAVA.resolveSibling("jcmd").toString(), Long.toString(pid())));
    line.addAll(List.of(command));
    Process jcmd = new ProcessBuilder(line).redirectErrorStream(true).start();
    String output = new String(jcmd.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    jcmd.waitFor();
    return output;
  }

  private static long ticksPerSecond() {
    try {
      Process getconf = new ProcessBuilder("getconf", "CLK_TCK").start();
      return Long.parseLong(
          new String(getconf.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim());
    } catch (IOException | NumberFormatException e) {
      return 100;
    }
  }

  @Override
  public void close() throws InterruptedException {
    // SIGTERM first, so that the JVM ends cleanly (a flight recording is written, the proxy
    // drains).
    process.destroy();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
    }
  }
}
