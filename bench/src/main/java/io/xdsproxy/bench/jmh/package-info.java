/**
 * Microbenchmarks (JMH) of the proxy's hot path, the fan-out of DESIGN.md's performance principle
 * ("serialize once, write many"): one upstream change reaching every stream of a node group ({@link
 * io.xdsproxy.bench.jmh.FanOutBenchmark}), and reading an ACK ({@link
 * io.xdsproxy.bench.jmh.AckBenchmark}). {@link io.xdsproxy.bench.jmh.DirectProxy} puts the serving
 * side together as the application does, over an {@link io.xdsproxy.bench.jmh.InMemoryUpstream},
 * with calls ({@link io.xdsproxy.bench.jmh.RecordingCall}) that have no transport behind them.
 *
 * <p>Unlike the load test, this package uses {@code proxy-core} and {@code downstream-server}
 * directly, and their public API only; it must not depend on the network, or on a control plane.
 *
 * <p>Threads: none of its own. Every executor the proxy is given runs its tasks on the calling
 * thread, so the benchmark thread does all of the proxy's work for one change, group and streams
 * alike, and nothing runs behind the measurement's back.
 */
package io.xdsproxy.bench.jmh;
