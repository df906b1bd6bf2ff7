package io.xdsproxy.bench.jmh;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Warmup;

/**
 * How every benchmark of the proxy runs (JMH's annotations are inherited): average time in
 * microseconds, one fork with a fixed 2 GB heap and the proxy's logging at warn, 3 warm-up and 5
 * measured iterations of 2 seconds. Results of different benchmarks are comparable because of it.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(
    value = 1,
    jvmArgsAppend = {"-Xms2g", "-Xmx2g", "-Dxds-proxy.log.level=warn"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
abstract class ProxyBenchmark {}
