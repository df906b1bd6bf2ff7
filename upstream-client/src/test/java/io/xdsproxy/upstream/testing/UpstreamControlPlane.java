package io.xdsproxy.upstream.testing;

import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import java.io.IOException;
import java.util.List;
import java.util.Set;

/**
 * A control plane on loopback that the proxy's upstream can be: java-control-plane itself ({@link
 * ControlPlane}), or an executable model of one the suite cannot run (istiod, go-control-plane),
 * whose request handling follows the source it cites. Every one serves ADS, SotW and Delta, keyed
 * by {@code node.cluster}; tests that run over {@link ControlPlaneKind} see only this.
 */
public interface UpstreamControlPlane extends AutoCloseable {

  /**
   * What it is, for test names and failure messages: "istiod", "go-control-plane (LinearCache)", …
   */
  String name();

  /** host:port to reach it. */
  String target();

  /**
   * Serves {@code snapshot} (its clusters, endpoints, listeners, routes and secrets; its version
   * where the modelled control plane uses the caller's versions) to nodes whose {@code
   * node.cluster} is {@code group}, and pushes it to their open streams the way the modelled
   * control plane does.
   */
  void setSnapshot(String group, Snapshot snapshot);

  /**
   * From the next {@link #setSnapshot} on, resources named {@code names} go out marked {@code
   * cache_control.do_not_cache} (in a {@code Resource} wrapper in SotW, as a control plane that
   * sets it must send it). Not every control plane can: java-control-plane cannot, and throws
   * {@link UnsupportedOperationException}.
   */
  void setDoNotCache(Set<String> names);

  /** Starts serving, on the port of the previous start if there was one. */
  void start() throws IOException;

  /** Stops serving and cuts every open stream, as a crashed control plane would. */
  void stop() throws InterruptedException;

  /** The node group (node.cluster) of every ADS stream opened so far, one entry per stream. */
  List<String> streamGroups();

  /** The node id of every ADS stream opened so far, one entry per stream. */
  List<String> streamNodeIds();

  /** The node id of every ADS stream open now, one entry per stream. */
  List<String> openStreamNodeIds();

  /** How many ADS streams are open now. */
  long openStreams();

  /** Every SotW request received, in order. */
  List<DiscoveryRequest> requests();

  /** Every Delta request received, in order. */
  List<DeltaDiscoveryRequest> deltaRequests();

  /**
   * How many responses (SotW and Delta) it has sent so far: a loop shows as a count that keeps
   * rising.
   */
  long responsesSent();

  @Override
  void close();
}
