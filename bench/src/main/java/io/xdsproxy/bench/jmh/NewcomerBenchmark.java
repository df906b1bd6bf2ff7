package io.xdsproxy.bench.jmh;

import java.net.UnknownHostException;
import org.openjdk.jmh.annotations.Benchmark;

/**
 * What a newcomer costs the proxy, a client of a reconnect storm: it joins a node group of {@link
 * GroupOfStreams#STREAMS} streams in sync, subscribes as Envoy does (wildcard CDS, then EDS for all
 * 1,000 clusters, each ACKed), is written the group's whole state of both types (about 315 KiB),
 * and leaves. Everything the proxy does for it runs on the benchmark thread, its requests' parsing
 * and its responses' encoding by the methods' marshallers included; the socket writes are not.
 *
 * <p>Run with {@code -prof gc} for the bytes allocated per newcomer.
 */
public class NewcomerBenchmark extends ProxyBenchmark {

  @Benchmark
  public Object newcomer(GroupOfStreams group) throws UnknownHostException {
    return group.newcomer();
  }
}
