package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.NodeGroups;
import java.util.concurrent.Executor;

/**
 * What every downstream stream is served from: the node groups, the threads its executor runs on,
 * and the metrics it counts itself in.
 */
public record Serving(NodeGroups groups, Executor pool, StreamMetrics metrics, Clients clients) {}
