package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.grpc.ServerInterceptors;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.xdsproxy.core.NodeGroupRule;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.SavedStates;
import io.xdsproxy.core.Ticker;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * The proxy's ADS service over a {@link MemoryUpstream}, put together as the proxy does it (node
 * groups keyed by {@code node.cluster}, the peer interceptor, limits), with every executor running
 * its tasks on the calling thread: when a test's call into the proxy returns, the proxy has done
 * everything that call caused. Or on an executor the test gives, to run what was queued in an order
 * of its choosing.
 */
final class InProcessProxy implements AutoCloseable {

  private static final Executor CALLING_THREAD = Runnable::run;

  /**
   * Only idle groups are timed, minutes after a test is over: the timer is shut down with the
   * proxy, so that nothing a fuzz input made outlives it.
   */
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(
          task -> {
            Thread thread = new Thread(task, "in-process-proxy-timer");
            thread.setDaemon(true);
            return thread;
          });

  private final NodeGroups groups;
  private final ServerServiceDefinition ads;
  private int port = 40_000;

  InProcessProxy(MemoryUpstream upstream, Limits limits) {
    this(upstream, limits, CALLING_THREAD);
  }

  /** With the proxy's work, the groups' and the streams', on {@code executor}. */
  InProcessProxy(MemoryUpstream upstream, Limits limits, Executor executor) {
    SimpleMeterRegistry meters = new SimpleMeterRegistry();
    groups =
        new NodeGroups(
            NodeGroupRule.of(List.of("cluster")),
            NodeGroups.firstClientsNode(),
            upstream,
            executor,
            timer,
            Ticker.SYSTEM,
            Duration.ofMinutes(5),
            meters,
            SavedStates.NONE);
    ServerContext serving =
        new ServerContext(
            groups,
            executor,
            new StreamMetrics(meters),
            new Clients(),
            Clock.systemUTC(),
            timer,
            limits,
            Access.OPEN,
            null);
    ads =
        ServerInterceptors.intercept(
            AggregatedDiscoveryService.definition(serving), new PeerInterceptor());
  }

  /** A new ADS State-of-the-World call, from a client of its own. */
  InProcessCall<InputStream> sotw() {
    return InProcessCall.start(
        method(
            AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod()
                .getFullMethodName()),
        new InetSocketAddress("127.0.0.1", port++));
  }

  /** A new ADS incremental call, from a client of its own. */
  InProcessCall<InputStream> delta() {
    return InProcessCall.start(
        method(
            AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod().getFullMethodName()),
        new InetSocketAddress("127.0.0.1", port++));
  }

  // The response type is the proxy's own pre-encoded form: a call only hands it to the method's
  // marshaller.
  @SuppressWarnings("unchecked")
  private <Q> ServerMethodDefinition<Q, Object> method(String fullName) {
    return (ServerMethodDefinition<Q, Object>) ads.getMethod(fullName);
  }

  @Override
  public void close() {
    groups.close();
    timer.shutdownNow();
  }
}
