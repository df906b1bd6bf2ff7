package io.xdsproxy.core;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.micrometer.core.instrument.MeterRegistry;
import io.xdsproxy.core.NodeGrouping.UngroupableNodeException;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every node group of the proxy. A group is opened by its first stream, within the limits of groups
 * in all and per tenant ({@link GroupLimits}), seen upstream as the node {@link UpstreamNodes}
 * makes for it, and closed once it has had no streams for the idle grace period.
 */
public final class NodeGroups implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(NodeGroups.class);

  private final NodeGrouping grouping;
  private final UpstreamNodes upstreamNodes;
  private final Duration idleGrace;
  private final ConcurrentMap<NodeGroupKey, NodeGroup> groups = new ConcurrentHashMap<>();

  /**
   * Whom each open group, idle ones too, is counted against: the tenant of the client that opened
   * it ({@link VerifiedIdentity#tenant}). Changed only inside {@link #groups}' compute for the
   * group's key, so it always names the groups {@link #groups} has.
   */
  private final ConcurrentMap<NodeGroupKey, String> openedBy = new ConcurrentHashMap<>();

  /** How many open groups each tenant opened; a tenant with none is not kept. */
  private final ConcurrentMap<String, Integer> openedPerTenant = new ConcurrentHashMap<>();

  /** What every group is run with. */
  private final GroupContext shared;

  private volatile boolean closed;

  /**
   * @param upstreamNodes the node the upstream sees for a group, and which clients may share it
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
      UpstreamNodes upstreamNodes,
      UpstreamSource source,
      Executor pool,
      ScheduledExecutorService timer,
      Ticker ticker,
      Duration idleGrace,
      MeterRegistry meters,
      SavedStates saved) {
    this.grouping = grouping;
    this.upstreamNodes = upstreamNodes;
    this.idleGrace = idleGrace;
    this.shared =
        new GroupContext(source, pool, timer, ticker, new GroupMetrics(meters, this), saved);
  }

  /** The upstream sees each group as its first client: that client's node, verbatim. */
  public static UpstreamNodes firstClientsNode() {
    return UpstreamNodes.firstMember(Optional.empty());
  }

  /** The rule that groups clients. */
  public NodeGrouping grouping() {
    return grouping;
  }

  /**
   * The group of {@code node}, for a client whose connection proves nothing, opened if needed, held
   * until {@link #release}.
   *
   * @throws UngroupableNodeException when the grouping rule cannot place the node, or the node may
   *     not share its group's upstream node
   */
  public NodeGroup acquire(Node node) throws UngroupableNodeException {
    try {
      return acquire(node, VerifiedIdentity.ANONYMOUS, GroupLimits.NONE);
    } catch (GroupFullException cannotBe) {
      throw new IllegalStateException(cannotBe);
    }
  }

  /**
   * The group of a client with {@code node} and {@code identity}, opened if needed within {@code
   * limits}, held until {@link #release}.
   *
   * @throws UngroupableNodeException when the grouping rule cannot place the node
   * @throws NodeGrouping.NotEntitledException when the identity entitles the client to no group, or
   *     its node may not share its group's upstream node ({@link UpstreamNodes#mismatch})
   * @throws GroupFullException when the group is held {@code limits.maxStreamsPerGroup()} times, or
   *     opening it would pass the limit of groups in all or of the client's tenant
   */
  public NodeGroup acquire(Node node, VerifiedIdentity identity, GroupLimits limits)
      throws UngroupableNodeException, GroupFullException {
    NodeGroupKey key = grouping.keyOf(node, identity);
    String tenant = identity.tenant();
    GroupFullException[] full = {null};
    String[] mismatch = {null};
    NodeGroup acquired =
        groups.compute(
            key,
            (k, group) -> {
              if (group == null) {
                full[0] = roomFor(k, node, tenant, limits);
                if (full[0] != null) {
                  return null;
                }
                Node upstreamNode = upstreamNodes.of(k, node);
                group = new NodeGroup(k, upstreamNode, tenant, limits, shared);
                openedBy.put(k, tenant);
                openedPerTenant.merge(tenant, 1, Integer::sum);
                LogFields.NONE
                    .node(node.getId())
                    .group(k)
                    .addTo(log.atInfo())
                    .log(
                        "node group {} opened for node '{}' ({}), seen upstream as node '{}'"
                            + " (upstream: {})",
                        k,
                        node.getId(),
                        identity,
                        upstreamNode.getId(),
                        shared.source().describe());
              } else {
                mismatch[0] = upstreamNodes.mismatch(group.upstreamNode(), node).orElse(null);
                if (mismatch[0] != null) {
                  return group;
                }
              }
              if (group.references >= limits.maxStreamsPerGroup()) {
                full[0] =
                    new GroupFullException(
                        "streams_per_group",
                        "node group "
                            + key
                            + " has "
                            + limits.maxStreamsPerGroup()
                            + " streams open already, the most one group may have",
                        "--max-streams-per-group");
                return group;
              }
              group.references++;
              return group;
            });
    if (full[0] != null) {
      throw full[0];
    }
    if (mismatch[0] != null) {
      throw new NodeGrouping.NotEntitledException(mismatch[0], true);
    }
    acquired.joined(node);
    return acquired;
  }

  /**
   * Null when a group {@code key} may be opened for {@code tenant}; else why not. Runs inside
   * {@link #groups}' compute of the new key.
   */
  private GroupFullException roomFor(
      NodeGroupKey key, Node node, String tenant, GroupLimits limits) {
    if (groups.size() >= limits.maxGroups()) {
      return new GroupFullException(
          "node_groups",
          "the proxy has "
              + limits.maxGroups()
              + " node groups open already (idle ones too, until their grace ends), the most it"
              + " may have; node '"
              + node.getId()
              + "' would open group "
              + key,
          "--max-node-groups");
    }
    if (openedPerTenant.getOrDefault(tenant, 0) >= limits.maxGroupsPerTenant()) {
      return new GroupFullException(
          "node_groups_per_client",
          "the clients of "
              + tenant
              + " have opened "
              + limits.maxGroupsPerTenant()
              + " node groups already (idle ones too, until their grace ends), the most one"
              + " client identity (or address, without a certificate) may open; node '"
              + node.getId()
              + "' would open group "
              + key,
          "--max-node-groups-per-client");
    }
    return null;
  }

  /**
   * A node group is not opened, or not joined, or not asked for more upstream ({@link
   * NodeGroup#subscribe}), for a limit.
   *
   * @param limit the limit's name, as {@code xds_downstream_limited_total} counts it
   * @param flag the flag that sets it
   */
  public static final class GroupFullException extends Exception {
    private final String limit;
    private final String flag;

    GroupFullException(String limit, String message, String flag) {
      super(message);
      this.limit = limit;
      this.flag = flag;
    }

    public String limit() {
      return limit;
    }

    public String flag() {
      return flag;
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
          if (idle[0]) {
            forget(k);
          }
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

  /** {@code key}'s group is gone: it no longer counts against its tenant. */
  private void forget(NodeGroupKey key) {
    String tenant = openedBy.remove(key);
    if (tenant != null) {
      openedPerTenant.computeIfPresent(tenant, (t, open) -> open > 1 ? open - 1 : null);
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
    openedBy.clear();
    openedPerTenant.clear();
  }
}
