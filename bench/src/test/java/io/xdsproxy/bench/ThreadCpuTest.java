package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class ThreadCpuTest {

  @Test
  void aThreadsTimeGoesToTheRoleItsNameSays() throws Exception {
    long pid = ProcessHandle.current().pid();
    ThreadCpu before = ThreadCpu.of(pid);
    CountDownLatch spent = new CountDownLatch(1);
    AtomicBoolean stop = new AtomicBoolean();
    Thread worker =
        new Thread(
            () -> {
              ThreadMXBean bean = ManagementFactory.getThreadMXBean();
              long start = bean.getCurrentThreadCpuTime();
              while (!stop.get()) {
                if (bean.getCurrentThreadCpuTime() - start > 300_000_000L) {
                  spent.countDown();
                }
              }
            },
            "xds-proxy-worker-7");
    worker.start();
    try {
      spent.await();
      Map<ThreadCpu.Role, Double> byRole = ThreadCpu.of(pid).since(before);

      assertThat(byRole.keySet()).containsExactly(ThreadCpu.Role.values());
      assertThat(byRole.get(ThreadCpu.Role.WORKERS)).isGreaterThanOrEqualTo(0.29);
    } finally {
      stop.set(true);
      worker.join();
    }
  }

  @Test
  void rolesByName() {
    assertThat(ThreadCpu.Role.of("xds-proxy-worke")).isEqualTo(ThreadCpu.Role.WORKERS);
    assertThat(ThreadCpu.Role.of("xds-server-io-1")).isEqualTo(ThreadCpu.Role.EVENT_LOOPS);
    assertThat(ThreadCpu.Role.of("grpc-nio-worker")).isEqualTo(ThreadCpu.Role.EVENT_LOOPS);
    assertThat(ThreadCpu.Role.of("C2 CompilerThre")).isEqualTo(ThreadCpu.Role.JIT);
    assertThat(ThreadCpu.Role.of("GC Thread#1")).isEqualTo(ThreadCpu.Role.GC);
    assertThat(ThreadCpu.Role.of("G1 Refine#0")).isEqualTo(ThreadCpu.Role.GC);
    assertThat(ThreadCpu.Role.of("xds-upstream-io")).isEqualTo(ThreadCpu.Role.OTHER);
  }
}
