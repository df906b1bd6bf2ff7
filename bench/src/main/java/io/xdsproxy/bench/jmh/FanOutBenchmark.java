package io.xdsproxy.bench.jmh;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.OperationsPerInvocation;

/**
 * What the proxy spends per downstream stream to fan one upstream change out to every stream of a
 * node group ("serialize once, write many": DESIGN.md's performance principle). One invocation is
 * one change reaching {@link GroupOfStreams#STREAMS} streams, so the scores and {@code
 * gc.alloc.rate.norm} are per stream. All of it runs on the benchmark thread: the group's store
 * update, each stream's diff, response, metrics and client-status bookkeeping, and the response's
 * encoding by the method's marshaller; the socket write itself is not in it.
 *
 * <p>Run with {@code -prof gc} for the bytes allocated per stream.
 */
public class FanOutBenchmark extends ProxyBenchmark {

  /**
   * New endpoints of one cluster: each stream is written a response with the one
   * ClusterLoadAssignment. The clients do not ACK; the proxy does not wait for an ACK before the
   * next change, so each change costs it the same either way.
   */
  @Benchmark
  @OperationsPerInvocation(GroupOfStreams.STREAMS)
  public void endpointChange(GroupOfStreams group) {
    group.changeEndpoints();
  }

  /**
   * {@link #endpointChange}, and every client's ACK read by the proxy: a SotW ACK repeats the names
   * of all 1,000 clusters, a Delta ACK is a nonce. Includes the clients' making of their ACKs (a
   * few small protobuf fields each; the node and names are pre-encoded).
   */
  @Benchmark
  @OperationsPerInvocation(GroupOfStreams.STREAMS)
  public void endpointChangeAndAcks(GroupOfStreams group) {
    group.changeEndpoints();
    group.ackAll();
  }

  /**
   * A new version of one Cluster: a SotW stream is written the whole CDS state (1,000 clusters,
   * encoded once per version and shared by every stream), a Delta stream the one cluster.
   */
  @Benchmark
  @OperationsPerInvocation(GroupOfStreams.STREAMS)
  public void clusterChange(GroupOfStreams group) {
    group.changeCluster();
  }
}
