package io.xdsproxy.bench.jmh;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.grpc.ServerInterceptors;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.xdsproxy.core.NodeGroupRule;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.SavedStates;
import io.xdsproxy.core.Ticker;
import io.xdsproxy.core.UpstreamSource;
import io.xdsproxy.downstream.xds.AggregatedDiscoveryService;
import io.xdsproxy.downstream.xds.Clients;
import io.xdsproxy.downstream.xds.PeerInterceptor;
import io.xdsproxy.downstream.xds.ServerContext;
import io.xdsproxy.downstream.xds.StreamMetrics;
import java.io.InputStream;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

/**
 * The proxy's serving side put together as {@code XdsProxy} does it (node groups keyed by {@code
 * node.cluster}, the default rule, over an upstream source; the ADS service behind the {@link
 * PeerInterceptor}; Prometheus meters), without the network. Every executor runs its tasks on the
 * calling thread, so the thread that pushes an update does all of the proxy's work for it, and
 * nothing runs behind a benchmark's back.
 */
final class DirectProxy implements AutoCloseable {

  private static final Executor CALLING_THREAD = Runnable::run;

  private final ScheduledExecutorService timer;
  private final NodeGroups groups;
  private final Clients clients = new Clients();
  private final ServerServiceDefinition ads;

  DirectProxy(UpstreamSource upstream) {
    // Only idle groups and TTLs are timed, and neither happens while a benchmark runs.
    timer =
        Executors.newSingleThreadScheduledExecutor(
            task -> {
              Thread thread = new Thread(task, "direct-proxy-timer");
              thread.setDaemon(true);
              return thread;
            });
    PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    groups =
        new NodeGroups(
            NodeGroupRule.of(List.of("cluster")),
            NodeGroups.firstClientsNode(),
            upstream,
            CALLING_THREAD,
            timer,
            Ticker.SYSTEM,
            Duration.ofMinutes(5),
            meters,
            SavedStates.NONE);
    ServerContext serving =
        new ServerContext(
            groups, CALLING_THREAD, new StreamMetrics(meters), clients, Clock.systemUTC());
    ads =
        ServerInterceptors.intercept(
            AggregatedDiscoveryService.definition(serving), new PeerInterceptor());
  }

  /**
   * ADS State of the World: requests read by the proxy's own marshaller, responses as the proxy
   * writes them.
   */
  ServerMethodDefinition<InputStream, Object> sotw() {
    return method(
        AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod().getFullMethodName());
  }

  /** ADS incremental (Delta). */
  ServerMethodDefinition<InputStream, Object> delta() {
    return method(
        AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod().getFullMethodName());
  }

  /** The open streams, as the admin server and client status see them. */
  Clients clients() {
    return clients;
  }

  // Each method's response type is the proxy's business (SotW writes its own pre-encoded form): a
  // call only hands what it is given to the method's marshaller.
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
