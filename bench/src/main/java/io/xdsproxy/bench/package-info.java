/**
 * The load test, outside the data flow, looking at it from both ends: a control plane of its own
 * ({@link io.xdsproxy.bench.BenchControlPlane}, java-control-plane) and simulated Envoy clients
 * ({@link io.xdsproxy.bench.LoadClients}), each server in its own JVM ({@link
 * io.xdsproxy.bench.JavaProcess}), to measure how long a change takes to reach every client and
 * what serving them costs, directly, through the proxy, and from a bare gRPC server that is the
 * transport alone ({@link io.xdsproxy.bench.BenchFloor}, the floor) ({@link
 * io.xdsproxy.bench.Compare}, {@link io.xdsproxy.bench.Sweep}), or whether anything leaks over time
 * ({@link io.xdsproxy.bench.Soak}); plaintext, or mutual TLS as a fleet runs it ({@link
 * io.xdsproxy.bench.BenchTls}), and what a handshake costs on each TLS provider ({@link
 * io.xdsproxy.bench.Handshakes}).
 *
 * <p>It talks to the proxy only as its peers do, over the wire, and starts it as an operator does
 * (the application's jar and flags): nothing here may reach into the proxy's classes, so that what
 * is measured is what runs in production.
 *
 * <p>Threads: the clients' streams run on their Netty event loops (gRPC's direct executor), one
 * stream's callbacks at a time; the driver's main thread makes rounds and samples the processes. In
 * the floor's process, a stream's callbacks run on its event loop and an update is written by a
 * pool of one thread per core; each stream's monitor keeps the two apart.
 */
package io.xdsproxy.bench;
