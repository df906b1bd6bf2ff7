package io.xdsproxy.app;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.ExecutorServiceMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.netty.util.internal.PlatformDependent;
import io.xdsproxy.core.WorkLanes;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;

/**
 * The process's meters beside the xDS ones: the JVM's, the worker pool's and the timer's, the
 * workers' lanes, the build, the xDS port's TLS implementation and Netty's direct memory.
 */
final class ProxyMeters {

  private ProxyMeters() {}

  /** Binds them to {@code meters}. */
  static void bind(
      MeterRegistry meters,
      ThreadPoolExecutor pool,
      ScheduledExecutorService timer,
      WorkLanes lanes) {
    List.of(
            new JvmMemoryMetrics(),
            new JvmGcMetrics(),
            new JvmThreadMetrics(),
            new ClassLoaderMetrics(),
            new ProcessorMetrics(),
            new UptimeMetrics(),
            new FileDescriptorMetrics(),
            // Queued tasks that grow on the worker pool mean the proxy is behind on its streams.
            new ExecutorServiceMetrics(pool, "xds-proxy-worker", List.of()),
            new ExecutorServiceMetrics(timer, "xds-proxy-timer", List.of()))
        .forEach(binder -> binder.bindTo(meters));
    bindProcessMeters(meters);
    Gauge.builder("xds.worker.queued.tasks", lanes, WorkLanes::initialQueued)
        .description(
            "Tasks waiting for a worker, by lane: newcomers' first states (initial) and everything"
                + " else, updates to the streams already served first (change)")
        .tag("lane", "initial")
        .register(meters);
    Gauge.builder("xds.worker.queued.tasks", lanes, WorkLanes::changeQueued)
        .description(
            "Tasks waiting for a worker, by lane: newcomers' first states (initial) and everything"
                + " else, updates to the streams already served first (change)")
        .tag("lane", "change")
        .register(meters);
    FunctionCounter.builder("xds.worker.initial.held", lanes, WorkLanes::heldByGate)
        .description(
            "Times a worker had newcomers' work to do and left it, because the xDS port's event"
                + " loops lagged (xds_server_event_loop_lag_seconds)")
        .register(meters);
  }

  /**
   * The TLS implementation of the xDS port ({@code xds_proxy_tls_provider}, 1, {@code openssl} or
   * {@code jdk} as its label), as the build's info is told: what {@code --tls-provider auto} came
   * to on this machine, so that a fleet's replicas that fell back to the JDK's can be found.
   */
  static void bindTlsProvider(MeterRegistry meters, TlsProvider.Chosen provider) {
    Gauge.builder("xds.proxy.tls.provider", () -> 1)
        .description(
            "The TLS implementation of the xDS port, as a label: openssl (BoringSSL) or jdk; absent"
                + " for plaintext")
        .tag("provider", provider.name())
        .register(meters);
  }

  /**
   * The build this is ({@code xds_proxy_build_info}, 1, its version and revision as labels, to join
   * on), and the direct memory Netty counts: every buffer it allocates outside the heap, for any
   * allocator, the arenas of the pooled allocator grpc-netty uses included. Those arenas keep what
   * they once took, so the value follows the peak traffic, not the current; with its maximum
   * ({@code -XX:MaxDirectMemorySize}, by default the heap's maximum) an alert can tell a pod that
   * will soon fail to allocate.
   */
  private static void bindProcessMeters(MeterRegistry meters) {
    Gauge.builder("xds.proxy.build.info", () -> 1)
        .description(
            "The build of the proxy: its version and the git revision it was built from, as labels")
        .tag("version", BuildInfo.CURRENT.version())
        .tag("revision", BuildInfo.CURRENT.revision())
        .register(meters);
    Gauge.builder("netty.direct.memory.used", PlatformDependent::usedDirectMemory)
        .description(
            "Direct memory Netty allocated and has not freed, its pooled allocators' arenas included")
        .baseUnit(BaseUnits.BYTES)
        .register(meters);
    Gauge.builder("netty.direct.memory.max", PlatformDependent::maxDirectMemory)
        .description("The most direct memory Netty may allocate")
        .baseUnit(BaseUnits.BYTES)
        .register(meters);
  }
}
