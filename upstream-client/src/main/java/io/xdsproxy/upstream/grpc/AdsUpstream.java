package io.xdsproxy.upstream.grpc;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.UpstreamSource;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A control plane reached over gRPC ADS. One channel (one HTTP/2 connection) carries the sessions
 * of every node group, one stream each: invariant 1 of DESIGN.md.
 */
public final class AdsUpstream implements UpstreamSource {

  /** Largest response accepted from the control plane: a big mesh's full CDS runs to tens of MiB. */
  static final int MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

  /** The variant of ADS spoken to the control plane. */
  public enum Protocol {
    SOTW, DELTA
  }

  private final String target;
  private final Protocol protocol;
  private final ManagedChannel channel;
  private final AdsSession.Context context;

  /**
   * @param target {@code host:port}; a DNS name is resolved, and re-resolved on reconnect
   * @param protocol State of the World or incremental ADS
   * @param notFoundTimeout how long a requested name may go unanswered before it is taken not to
   *     exist ("Knowing When a Requested Resource Does Not Exist": 15 s recommended)
   */
  public AdsUpstream(
      String target,
      Protocol protocol,
      Executor pool,
      ScheduledExecutorService timer,
      Backoff backoff,
      Duration notFoundTimeout) {
    this.target = target;
    this.protocol = protocol;
    this.channel = NettyChannelBuilder.forTarget(target)
        .usePlaintext()
        .executor(pool)
        .maxInboundMessageSize(MAX_RESPONSE_BYTES)
        // The spec's advice for ADS connections: HTTP/2 keepalive detects a peer that went silent.
        .keepAliveTime(30, TimeUnit.SECONDS)
        .keepAliveTimeout(10, TimeUnit.SECONDS)
        .build();
    this.context = new AdsSession.Context(channel, target, pool, timer, backoff, notFoundTimeout, new Random());
  }

  @Override
  public UpstreamSession open(NodeGroupKey group, Node node, UpstreamListener listener) {
    return switch (protocol) {
      case SOTW -> new SotwUpstreamSession(group, node, listener, context);
      case DELTA -> new DeltaUpstreamSession(group, node, listener, context);
    };
  }

  @Override
  public String describe() {
    return "control plane " + target + " (" + (protocol == Protocol.SOTW ? "SotW" : "Delta") + " ADS)";
  }

  @Override
  public void close() {
    channel.shutdownNow();
  }
}
