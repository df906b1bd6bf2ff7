package io.xdsproxy.core;

import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

/**
 * What every node group of the proxy is run with, made once by {@link NodeGroups}: where its
 * upstream session comes from, the worker pool its executor runs on, the timer of its timed rules
 * (TTLs, the not-found rule of saved state), the ticker its updates are stamped with, its meters,
 * and where its state is saved and read back after a restart.
 */
record GroupContext(
    UpstreamSource source,
    Executor pool,
    ScheduledExecutorService timer,
    Ticker ticker,
    GroupMetrics metrics,
    SavedStates saved) {}
