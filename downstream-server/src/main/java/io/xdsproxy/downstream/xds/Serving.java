package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.NodeGroups;
import java.time.Clock;
import java.util.concurrent.Executor;

/**
 * What every downstream stream is served from: the node groups, the threads its executor runs on,
 * the metrics it counts itself in, the registry of open streams, and the clock its client status is
 * stamped with.
 */
public record Serving(NodeGroups groups, Executor pool, StreamMetrics metrics, Clients clients, Clock clock) {}
