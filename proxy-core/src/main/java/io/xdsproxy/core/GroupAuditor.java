package io.xdsproxy.core;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.xdsproxy.core.AuditComparison.Difference;
import io.xdsproxy.core.AuditComparison.Kind;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * The group audit: now and then, for a member of a node group other than the node the upstream
 * sees, asks the upstream what it would send that member ({@link UpstreamSource#audit}) and
 * compares it with what the group holds ({@link AuditComparison}). A group shares one upstream
 * session, so every member must be entitled to the same configuration (DESIGN, "Node group"); a
 * node-group key that puts differently configured nodes together would otherwise silently serve one
 * client another's configuration.
 *
 * <p>Cost is bounded and off the hot path: one audit at a time across the proxy, at most one
 * started per {@code minGap}, each group at most once per {@code interval}; the audit runs on the
 * worker pool and its own upstream stream, never on a group's or a stream's executor (it reads the
 * group's immutable snapshots, and asks the group's executor once for its members and interest). A
 * difference is checked again by a second audit before it counts, so that an update on its way to
 * the group does not raise a false alarm.
 *
 * <p>Threads: {@link #tick} runs on the timer; an audit's steps run on the pool, one audit at a
 * time, so the per-group records are only written by whichever of the two holds {@link #running};
 * {@link #lastResult} reads them from any thread (a concurrent map of immutable results).
 */
public final class GroupAuditor implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(GroupAuditor.class);

  /** A fleet put together wrongly mismatches in every group at once: the lines are limited. */
  private static final LimitedLog mismatches =
      LimitedLog.of(log, Level.WARN, 20, Duration.ofMinutes(1));

  private static final LimitedLog failures =
      LimitedLog.of(log, Level.INFO, 20, Duration.ofMinutes(1));

  /** The most differing names a log line names, per kind. */
  static final int NAMES_LOGGED = 10;

  /** The most differences a result keeps for the config dump. */
  static final int DIFFERENCES_KEPT = 100;

  /** What an audit found. */
  public enum Outcome {
    /** The node is served what the group is. */
    MATCH,
    /** It is not, twice in a row. */
    MISMATCH,
    /** The upstream could not be asked, or answered none of the types. */
    FAILED;

    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * The last audit of one group.
   *
   * @param at when it ended
   * @param node the member node audited
   * @param differences at most {@link #DIFFERENCES_KEPT}, for a mismatch
   * @param detail for a failure, why; else which types were compared
   */
  public record Result(
      Instant at, String node, Outcome outcome, List<Difference> differences, String detail) {
    public Result {
      differences = List.copyOf(differences);
    }
  }

  /** What the auditor keeps of one group. */
  private static final class Audits {
    /** When its last audit began ({@link Ticker}); absent: never audited. */
    Long lastAudit;

    /** When each recent member was last audited; a member never audited is asked first. */
    final Map<String, Long> membersAudited = new HashMap<>();

    final Counter mismatches;

    Audits(Counter mismatches) {
      this.mismatches = mismatches;
    }
  }

  private final NodeGroups groups;
  private final UpstreamSource source;
  private final Executor pool;
  private final ScheduledExecutorService timer;
  private final Ticker ticker;
  private final Clock clock;
  private final Duration interval;
  private final Duration minGap;
  private final Duration attemptTimeout;
  private final MeterRegistry meters;
  private final Map<Outcome, Counter> audits = new EnumMap<>(Outcome.class);
  private final Map<NodeGroupKey, Audits> byGroup = new HashMap<>();
  private final Map<NodeGroupKey, Result> results = new ConcurrentHashMap<>();

  /** Whether an audit is under way: {@link #tick} starts none until it ends. */
  private final java.util.concurrent.atomic.AtomicBoolean running =
      new java.util.concurrent.atomic.AtomicBoolean();

  private volatile boolean closed;
  private volatile ScheduledFuture<?> ticking;

  /**
   * @param interval how long after its last audit a group is audited again
   * @param minGap the least time between the starts of two audits, over all groups
   * @param attemptTimeout how long one audit's session may take before it is counted as failed
   *     (beyond the not-found timeout the source applies to a type's answer)
   */
  public GroupAuditor(
      NodeGroups groups,
      UpstreamSource source,
      Executor pool,
      ScheduledExecutorService timer,
      Ticker ticker,
      Clock clock,
      Duration interval,
      Duration minGap,
      Duration attemptTimeout,
      MeterRegistry meters) {
    if (!source.auditable()) {
      throw new IllegalArgumentException(source.describe() + " cannot be audited");
    }
    this.groups = groups;
    this.source = source;
    this.pool = pool;
    this.timer = timer;
    this.ticker = ticker;
    this.clock = clock;
    this.interval = interval;
    this.minGap = minGap;
    this.attemptTimeout = attemptTimeout;
    this.meters = meters;
    for (Outcome outcome : Outcome.values()) {
      audits.put(
          outcome,
          Counter.builder("xds.group.audits")
              .description(
                  "Group audits by result: match, mismatch (a member node is served other configuration"
                      + " than its group, found twice in a row), failed (the control plane not reached or not"
                      + " answering)")
              .tag("result", outcome.label())
              .register(meters));
    }
  }

  /** Starts auditing: the timer looks for a group to audit every {@code min(minGap, interval)}. */
  public GroupAuditor start() {
    scheduleTick();
    return this;
  }

  private void scheduleTick() {
    long period = Math.max(1, Math.min(minGap.toMillis(), interval.toMillis()));
    try {
      ticking =
          timer.schedule(
              () -> {
                tick();
                if (!closed) {
                  scheduleTick();
                }
              },
              period,
              TimeUnit.MILLISECONDS);
    } catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
      closed = true;
    }
  }

  /** The last audit of {@code group}, if it has had one. Any thread. */
  public Optional<Result> lastResult(NodeGroupKey group) {
    return Optional.ofNullable(results.get(group));
  }

  /**
   * Starts the next audit, unless one is under way (turns come every {@code minGap}, so two audits
   * never start closer): of the groups with a member to audit whose last audit is {@code interval}
   * old or more, the one audited longest ago (a group never audited first), so that every group has
   * its turn.
   */
  void tick() {
    if (closed || !running.compareAndSet(false, true)) {
      return;
    }
    boolean handedOver = false;
    try {
      long now = ticker.nanos();
      List<NodeGroup> open = groups.groups();
      forgetClosed(open);
      NodeGroup next = null;
      long oldest = Long.MAX_VALUE;
      for (NodeGroup group : open) {
        if (!group.hasOtherMembers()) {
          continue;
        }
        Audits record = audits(group.key());
        long last = record.lastAudit == null ? Long.MIN_VALUE : record.lastAudit;
        boolean due = record.lastAudit == null || now - last >= interval.toNanos();
        if (due
            && (next == null
                || last < oldest
                || last == oldest && group.key().value().compareTo(next.key().value()) < 0)) {
          next = group;
          oldest = last;
        }
      }
      if (next == null) {
        return;
      }
      audits(next.key()).lastAudit = now;
      audit(next).whenComplete((result, error) -> running.set(false));
      handedOver = true;
    } catch (RuntimeException e) {
      log.warn("group audit: could not start one: {}", e.toString());
    } finally {
      if (!handedOver) {
        running.set(false);
      }
    }
  }

  /** Audits {@code group}: one of its members, once, and once more if they differ. */
  private CompletableFuture<Void> audit(NodeGroup group) {
    return group
        .membership()
        .orTimeout(attemptTimeout.toMillis(), TimeUnit.MILLISECONDS)
        .thenComposeAsync(
            membership -> {
              Optional<Node> member = pickMember(group.key(), membership.members());
              if (member.isEmpty() || membership.interest().isEmpty()) {
                return CompletableFuture.completedFuture(null);
              }
              Node node = member.get();
              audits(group.key()).membersAudited.put(node.getId(), ticker.nanos());
              Map<TypeUrl, Interest> wanted = membership.interest();
              return attempt(group, node, wanted)
                  .thenComposeAsync(
                      first -> {
                        if (first.differences().isEmpty()) {
                          return CompletableFuture.completedFuture(first);
                        }
                        // An update may have been on its way to the group: a difference counts only
                        // if a second look finds it too.
                        return attempt(group, node, wanted)
                            .thenApply(second -> confirmed(first, second));
                      },
                      pool)
                  .handle(
                      (attempt, error) ->
                          record(group.key(), group.upstreamNode(), node, attempt, error));
            },
            pool)
        .exceptionally(
            error -> {
              log.debug("group {}: no audit: {}", group.key(), error.toString());
              return null;
            });
  }

  /**
   * What one look at the upstream found: its differences, the types the upstream answered, and
   * those of them the group had been answered for too, which could be compared.
   */
  private record Attempt(
      List<Difference> differences, Set<TypeUrl> answered, Set<TypeUrl> compared) {}

  private CompletableFuture<Attempt> attempt(
      NodeGroup group, Node node, Map<TypeUrl, Interest> wanted) {
    Map<TypeUrl, TypeSnapshot> before = new HashMap<>();
    wanted.keySet().forEach(type -> before.put(type, group.snapshot(type)));
    return source
        .audit(node, wanted)
        .orTimeout(attemptTimeout.toMillis(), TimeUnit.MILLISECONDS)
        .thenApplyAsync(
            answers -> {
              Set<TypeUrl> compared = new LinkedHashSet<>();
              for (TypeUrl type : wanted.keySet()) {
                if (answers.containsKey(type) && group.snapshot(type).isReceived()) {
                  compared.add(type);
                }
              }
              return new Attempt(
                  AuditComparison.compare(wanted, before, group::snapshot, answers),
                  answers.keySet(),
                  compared);
            },
            pool);
  }

  private static Attempt confirmed(Attempt first, Attempt second) {
    Set<Difference> earlier = new HashSet<>(first.differences());
    return new Attempt(
        second.differences().stream().filter(earlier::contains).toList(),
        second.answered(),
        second.compared());
  }

  /** The member audited longest ago, a member never audited first, the most recent of those. */
  private Optional<Node> pickMember(NodeGroupKey group, List<Node> members) {
    Map<String, Long> audited = audits(group).membersAudited;
    Set<String> present = members.stream().map(Node::getId).collect(Collectors.toSet());
    audited.keySet().retainAll(present);
    return members.stream()
        .min(Comparator.comparingLong(node -> audited.getOrDefault(node.getId(), Long.MIN_VALUE)));
  }

  private Void record(
      NodeGroupKey group, Node upstreamNode, Node node, Attempt attempt, Throwable error) {
    LogFields fields = LogFields.NONE.group(group).node(node.getId());
    Result result;
    if (error == null && !attempt.answered().isEmpty() && attempt.compared().isEmpty()) {
      // Not the audit's failure: the group's own state has yet to come. The next turn tries again.
      log.debug("group {}: audit of node '{}' compared nothing yet", group, node.getId());
      return null;
    }
    if (error != null || attempt.compared().isEmpty()) {
      String why =
          error != null
              ? describe(error)
              : "the control plane answered none of the types asked for in time";
      result = new Result(clock.instant(), node.getId(), Outcome.FAILED, List.of(), why);
      failures.log(fields, "group {}: the audit of node '{}' failed: {}", group, node.getId(), why);
    } else if (attempt.differences().isEmpty()) {
      result =
          new Result(
              clock.instant(),
              node.getId(),
              Outcome.MATCH,
              List.of(),
              "compared " + shortNames(attempt.compared()));
      log.debug("group {}: node '{}' is served what the group is", group, node.getId());
    } else {
      List<Difference> differences = attempt.differences();
      result =
          new Result(
              clock.instant(),
              node.getId(),
              Outcome.MISMATCH,
              differences.subList(0, Math.min(differences.size(), DIFFERENCES_KEPT)),
              "compared " + shortNames(attempt.compared()));
      audits(group).mismatches.increment();
      logMismatch(fields, group, upstreamNode, node, differences);
    }
    audits.get(result.outcome()).increment();
    results.put(group, result);
    return null;
  }

  /** One line per type that differs, naming the node, the type and some of the names. */
  private static void logMismatch(
      LogFields fields,
      NodeGroupKey group,
      Node upstreamNode,
      Node node,
      List<Difference> differences) {
    Map<TypeUrl, List<Difference>> byType =
        differences.stream()
            .collect(
                Collectors.groupingBy(
                    Difference::type, java.util.TreeMap::new, Collectors.toList()));
    byType.forEach(
        (type, ofType) -> {
          StringBuilder names = new StringBuilder();
          for (Kind kind : Kind.values()) {
            List<String> ofKind =
                ofType.stream().filter(d -> d.kind() == kind).map(Difference::name).toList();
            if (!ofKind.isEmpty()) {
              names.append(names.length() == 0 ? "" : "; ").append(kind.label()).append(' ');
              names.append(ofKind.subList(0, Math.min(ofKind.size(), NAMES_LOGGED)));
              if (ofKind.size() > NAMES_LOGGED) {
                names.append(" and ").append(ofKind.size() - NAMES_LOGGED).append(" more");
              }
            }
          }
          mismatches.log(
              fields.type(type),
              "group {}: node '{}' is a member of the group but the control plane serves it other {}"
                  + " than the group's upstream node '{}' gets, and the proxy serves it the group's: {}."
                  + " The node-group key (--node-group-key) puts nodes with different configuration in"
                  + " one group",
              group,
              node.getId(),
              type.shortName(),
              upstreamNode.getId(),
              names);
        });
  }

  private static String shortNames(Set<TypeUrl> types) {
    return types.stream().sorted().map(TypeUrl::shortName).collect(Collectors.joining(", "));
  }

  private static String describe(Throwable error) {
    Throwable cause = error;
    while ((cause instanceof java.util.concurrent.CompletionException
            || cause instanceof java.util.concurrent.ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cause instanceof java.util.concurrent.TimeoutException) {
      return "no answer within the audit's time";
    }
    return cause.getMessage() != null ? cause.getMessage() : cause.toString();
  }

  private Audits audits(NodeGroupKey group) {
    return byGroup.computeIfAbsent(
        group,
        key ->
            new Audits(
                Counter.builder("xds.group.audit.mismatches")
                    .description(
                        "Audits that found a member node of the group served other configuration than the"
                            + " group's upstream node (see the log and /config_dump)")
                    .tag("group", key.label())
                    .register(meters)));
  }

  /** Groups closed since the last turn: their records and meters go. */
  private void forgetClosed(List<NodeGroup> open) {
    Set<NodeGroupKey> keys = open.stream().map(NodeGroup::key).collect(Collectors.toSet());
    List<NodeGroupKey> gone = new ArrayList<>();
    for (NodeGroupKey key : byGroup.keySet()) {
      if (!keys.contains(key)) {
        gone.add(key);
      }
    }
    for (NodeGroupKey key : gone) {
      meters.remove(byGroup.remove(key).mismatches);
      results.remove(key);
    }
  }

  @Override
  public void close() {
    closed = true;
    ScheduledFuture<?> next = ticking;
    if (next != null) {
      next.cancel(false);
    }
  }
}
