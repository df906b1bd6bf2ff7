package io.xdsproxy.core.testing;

import io.micrometer.core.instrument.MeterRegistry;
import io.xdsproxy.core.NodeGroupRule;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.SavedStates;
import io.xdsproxy.core.UpstreamSource;
import java.time.Duration;
import java.util.List;

/** Node groups as the unit tests of groups want them. */
public final class TestGroups {

  private TestGroups() {}

  /**
   * Groups keyed by the node's cluster, seen upstream as their first client, run on the calling
   * thread, timed by {@code time}, closed after {@code idleGrace} without streams.
   */
  public static NodeGroups byCluster(
      UpstreamSource upstream,
      FakeClock time,
      Duration idleGrace,
      MeterRegistry meters,
      SavedStates saved) {
    return new NodeGroups(
        NodeGroupRule.of(List.of("cluster")),
        NodeGroups.firstClientsNode(),
        upstream,
        Runnable::run,
        time.scheduler(),
        time.ticker(),
        idleGrace,
        meters,
        saved);
  }
}
