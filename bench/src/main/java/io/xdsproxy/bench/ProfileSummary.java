package io.xdsproxy.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;

/**
 * Where the time goes, from a flight recording ({@code Compare --profile DIR}): the methods most
 * often on CPU (self) and most often on the stack (total), and the threads (by pool) sampled, as
 * shares of the execution samples.
 *
 * <p>{@code java -cp bench/target/xds-bench.jar io.xdsproxy.bench.ProfileSummary FILE.jfr [TOP]}
 */
public final class ProfileSummary {

  private ProfileSummary() {}

  public static void main(String[] args) throws IOException {
    int top = args.length > 1 ? Integer.parseInt(args[1]) : 25;
    Map<String, Integer> self = new HashMap<>();
    Map<String, Integer> total = new HashMap<>();
    Map<String, Integer> threads = new HashMap<>();
    int samples = 0;
    double gcPauses = 0;
    int collections = 0;
    for (RecordedEvent event : RecordingFile.readAllEvents(Path.of(args[0]))) {
      if (event.getEventType().getName().equals("jdk.GarbageCollection")) {
        gcPauses += event.getDuration("sumOfPauses").toNanos() / 1e9;
        collections++;
        continue;
      }
      if (!event.getEventType().getName().equals("jdk.ExecutionSample")
          || event.getStackTrace() == null) {
        continue;
      }
      samples++;
      if (event.getThread("sampledThread") != null) {
        // Pools by name: "xds-proxy-worker-3" and "grpc-default-worker-ELG-1-2" count as one.
        String thread = event.getThread("sampledThread").getJavaName();
        threads.merge(thread == null ? "?" : thread.replaceAll("[-\\d]+$", ""), 1, Integer::sum);
      }
      Set<String> seen = new HashSet<>();
      boolean first = true;
      for (RecordedFrame frame : event.getStackTrace().getFrames()) {
        String method = frame.getMethod().getType().getName() + "." + frame.getMethod().getName();
        if (first) {
          self.merge(method, 1, Integer::sum);
          first = false;
        }
        if (seen.add(method)) {
          total.merge(method, 1, Integer::sum);
        }
      }
    }
    System.out.printf(
        "%d execution samples; %d collections, their pauses %.2f s in all%n%nself%n",
        samples, collections, gcPauses);
    print(self, samples, top);
    System.out.printf("%ntotal%n");
    print(total, samples, top);
    System.out.printf("%nthreads%n");
    print(threads, samples, top);
  }

  private static void print(Map<String, Integer> counts, int samples, int top) {
    counts.entrySet().stream()
        .sorted(Map.Entry.<String, Integer>comparingByValue().reversed())
        .limit(top)
        .forEach(
            e ->
                System.out.printf(
                    "%5.1f%%  %s%n", 100.0 * e.getValue() / Math.max(1, samples), e.getKey()));
  }
}
