package io.xdsproxy.core;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.micrometer.core.instrument.MeterRegistry;
import io.xdsproxy.core.NodeGrouping.UngroupableNodeException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every node group of the proxy. A group is opened by its first stream, with that client's node as
 * the node the upstream sees, and closed once it has had no streams for the idle grace period.
 */
public final class NodeGroups implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(NodeGroups.class);

  private final NodeGrouping grouping;
  private final BiFunction<NodeGroupKey, Node, Node> upstreamNodeOf;
  private final Duration idleGrace;
  private final ConcurrentMap<NodeGroupKey, NodeGroup> groups = new ConcurrentHashMap<>();

  /** What every group is run with. */
  private final GroupContext shared;

  private volatile boolean closed;

  /**
   * @param upstreamNode the node the upstream sees for a group, made from the group's first
   *     client's node; {@link #firstClientsNode()} or {@link #withId(String)}
   * @param timer runs the timed rules: a group's idle grace, its resources' TTLs
   * @param ticker stamps the time each update reached the proxy ({@link Ticker#SYSTEM} but in
   *     tests)
   * @param meters where the groups' meters go: open groups, store size, do_not_cache relays, TTL
   *     expiries
   * @param saved where each group is first served the state saved of it before a restart, and where
   *     its changes are saved; {@link SavedStates#NONE} for neither
   */
  public NodeGroups(
      NodeGrouping grouping,
      BiFunction<NodeGroupKey, Node, Node> upstreamNode,
      UpstreamSource source,
      Executor pool,
      ScheduledExecutorService timer,
      Ticker ticker,
      Duration idleGrace,
      MeterRegistry meters,
      SavedStates saved) {
    this.grouping = grouping;
    this.upstreamNodeOf = upstreamNode;
    this.idleGrace = idleGrace;
    this.shared =
        new GroupContext(source, pool, timer, ticker, new GroupMetrics(meters, this), saved);
  }

  /** The upstream sees each group as its first client: that client's node, verbatim. */
  public static BiFunction<NodeGroupKey, Node, Node> firstClientsNode() {
    return (key, node) -> node;
  }

  /**
   * The upstream sees each group as its first client's node with the id {@code template}, in which
   * {@code {group}} is the group's key and {@code {id}} the first client's id.
   */
  public static BiFunction<NodeGroupKey, Node, Node> withId(String template) {
    return (key, node) ->
        node.toBuilder()
            .setId(template.replace("{group}", key.value()).replace("{id}", node.getId()))
            .build();
  }

  /**
   * The group of {@code node}, opened if needed, held until {@link #release}.
   *
   * @throws UngroupableNodeException when the grouping rule cannot place the node
   */
  public NodeGroup acquire(Node node) throws UngroupableNodeException {
    try {
      return acquire(node, Integer.MAX_VALUE);
    } catch (GroupFullException cannotBe) {
      throw new IllegalStateException(cannotBe);
    }
  }

  /**
   * The group of {@code node}, opened if needed, held until {@link #release}, unless it is held
   * {@code maxStreams} times already.
   *
   * @throws UngroupableNodeException when the grouping rule cannot place the node
   * @throws GroupFullException when the group is held {@code maxStreams} times
   */
  public NodeGroup acquire(Node node, int maxStreams)
      throws UngroupableNodeException, GroupFullException {
    NodeGroupKey key = grouping.keyOf(node);
    boolean[] full = {false};
    NodeGroup acquired =
        groups.compute(
            key,
            (k, group) -> {
              if (group == null) {
                Node upstreamNode = upstreamNodeOf.apply(k, node);
                group = new NodeGroup(k, upstreamNode, shared);
                LogFields.NONE
                    .node(node.getId())
                    .group(k)
                    .addTo(log.atInfo())
                    .log(
                        "node group {} opened for node '{}', seen upstream as node '{}' (upstream: {})",
                        k,
                        node.getId(),
                        upstreamNode.getId(),
                        shared.source().describe());
              }
              full[0] = group.references >= maxStreams;
              if (!full[0]) {
                group.references++;
              }
              return group;
            });
    if (full[0]) {
      throw new GroupFullException(
          "node group "
              + key
              + " has "
              + maxStreams
              + " streams open already, the most one group may have");
    }
    acquired.joined(node);
    return acquired;
  }

  /** A node group has as many streams as it may have. */
  public static final class GroupFullException extends Exception {
    GroupFullException(String message) {
      super(message);
    }
  }

  /**
   * A stream of {@code group} ended. The group closes after the idle grace if no other comes: the
   * grace runs from the last stream's leaving, so a check scheduled when an earlier one left finds
   * the group has been idle again since, and leaves it to the newer check.
   */
  public void release(NodeGroup group) {
    boolean[] idle = {false};
    int[] idleSince = {0};
    groups.computeIfPresent(
        group.key(),
        (k, current) -> {
          current.references--;
          idle[0] = current.references == 0;
          if (idle[0]) {
            idleSince[0] = ++current.idlePeriods;
          }
          return current;
        });
    if (closed || !idle[0]) {
      // Every group is closed already (streams ending during shutdown have nothing left to
      // release), or the group has streams still: no idle check per stream that ends, which churn
      // makes many.
      return;
    }
    try {
      shared
          .timer()
          .schedule(
              () -> closeIfIdle(group, idleSince[0]), idleGrace.toMillis(), TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException shuttingDown) {
      closeIfIdle(group, idleSince[0]);
    }
  }

  /** Closes {@code group} if it has had no stream since its idle period {@code period} began. */
  private void closeIfIdle(NodeGroup group, int period) {
    boolean[] idle = {false};
    // Decided inside compute, which acquire() also runs under, so no stream can take the group
    // meanwhile.
    groups.computeIfPresent(
        group.key(),
        (k, current) -> {
          idle[0] = current == group && current.references == 0 && current.idlePeriods == period;
          return idle[0] ? null : current;
        });
    if (idle[0]) {
      group.close();
      LogFields.NONE
          .group(group.key())
          .addTo(log.atInfo())
          .log("node group {} closed after {} without streams", group.key(), idleGrace);
    }
  }

  /** The time updates are stamped with: what a fan-out latency must be measured against. */
  public Ticker ticker() {
    return shared.ticker();
  }

  public List<NodeGroup> groups() {
    return List.copyOf(groups.values());
  }

  @Override
  public void close() {
    closed = true;
    groups.values().forEach(NodeGroup::close);
    groups.clear();
  }
}
