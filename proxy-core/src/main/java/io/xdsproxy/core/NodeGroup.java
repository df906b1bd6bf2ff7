package io.xdsproxy.core;

import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.UpstreamSource.UpstreamListener;
import io.xdsproxy.core.UpstreamSource.UpstreamSession;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * One node group: its store, its upstream session, and the streams it serves. All of its state is
 * confined to its {@link SerialExecutor}; streams talk to it through the methods below, which only
 * enqueue, and read its store's immutable snapshots directly.
 */
public final class NodeGroup {

  private static final Logger log = LoggerFactory.getLogger(NodeGroup.class);

  /** A control plane that stops heartbeating lets every leased resource lapse at once. */
  private static final LimitedLog lapses = LimitedLog.of(log, Level.INFO);

  private final NodeGroupKey key;
  private final Node upstreamNode;
  private final SerialExecutor executor;
  private final ScheduledExecutorService timer;
  private final Ticker ticker;
  private final GroupMetrics metrics;
  private final ResourceStore store;
  private final SavedStates saved;

  /** What the group's watchers want, and the union the upstream is asked for. */
  private final GroupInterest interest;

  /**
   * What the group still serves of the state saved before a restart, until the upstream answers.
   */
  private final SavedOverlay fromDisk;

  /**
   * The last {@link #MEMBERS_KEPT} distinct nodes other than the upstream node that joined the
   * group, by id, the least recently joined first: who the group audit may ask the upstream about.
   * A node whose streams have ended stays until newer ones push it out: it was a member, and its
   * clients may come back to be served the group's state.
   */
  private final Map<String, Node> recentMembers =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Node> eldest) {
          return size() > MEMBERS_KEPT;
        }
      };

  /** Whether {@link #recentMembers} has ever had a node; read from any thread. */
  private volatile boolean hasOtherMembers;

  private UpstreamSession session;
  private boolean closed;

  /** How many member nodes a group remembers for the audit (a bound, not a sample of the fleet). */
  static final int MEMBERS_KEPT = 8;

  /** Streams holding this group; guarded by {@link NodeGroups}' map, not by the executor. */
  int references;

  /**
   * How many times the group has been left without streams; a check of the idle grace closes it
   * only if no stream came since the period it was scheduled for. Guarded like {@link #references}.
   */
  int idlePeriods;

  /**
   * @param tenant who opened the group ({@link VerifiedIdentity#tenant}): whose turn its upstream
   *     streams take when they wait to start
   * @param limits the bound on what the group's union asks of its upstream
   */
  NodeGroup(
      NodeGroupKey key, Node upstreamNode, String tenant, GroupLimits limits, GroupContext shared) {
    this.key = key;
    this.upstreamNode = upstreamNode;
    this.interest = new GroupInterest(key, limits.maxUpstreamNameBytesPerGroup());
    this.saved = shared.saved();
    this.timer = shared.timer();
    this.ticker = shared.ticker();
    this.store = new ResourceStore(ticker);
    this.metrics = shared.metrics();
    UpstreamSource source = shared.source();
    this.executor = new SerialExecutor(shared.pool(), "node group " + key);
    this.fromDisk = new SavedOverlay(key, saved, timer, executor, this::unconfirmed);
    // The saved state is in the store before the session can answer, or any stream subscribe.
    executor.execute(this::seed);
    executor.execute(
        () ->
            session =
                source.open(
                    key,
                    upstreamNode,
                    tenant,
                    new UpstreamListener() {
                      @Override
                      public void onUpdate(ResourceUpdate update) {
                        onUpstreamUpdates(List.of(update));
                      }

                      @Override
                      public void onUpdates(List<ResourceUpdate> updates) {
                        onUpstreamUpdates(updates);
                      }
                    }));
  }

  public NodeGroupKey key() {
    return key;
  }

  /** The node the upstream sees for this group. */
  public Node upstreamNode() {
    return upstreamNode;
  }

  /** The current state of {@code type}. Any thread. */
  public TypeSnapshot snapshot(TypeUrl type) {
    return store.snapshot(type);
  }

  public ResourceStore store() {
    return store;
  }

  /**
   * {@code watcher} now wants {@code wanted} of {@code type} ({@link Interest#NONE} for nothing);
   * it is told of every later snapshot of a type it wants, starting with the current one: a
   * snapshot published between the watcher's last look and this call would otherwise reach nobody.
   * A change that would take what the group asks its upstream past its bound is refused whole, and
   * the watcher told ({@link GroupWatcher#onRefused}).
   */
  public void subscribe(GroupWatcher watcher, TypeUrl type, Interest wanted) {
    executor.execute(
        () -> {
          if (closed) {
            return;
          }
          GroupInterest.Change change;
          try {
            change = interest.subscribe(watcher, type, wanted);
          } catch (NodeGroups.GroupFullException refused) {
            watcher.onRefused(refused);
            return;
          }
          Interest before = change.before();
          change.union().ifPresent(union -> session.updateInterest(type, union));
          TypeSnapshot current = store.snapshot(type);
          if (before.isEmpty() && !wanted.isEmpty()) {
            watcher.onSnapshots(List.of(current));
          }
          if (current.holdsUncacheable(wanted.beyond(before))) {
            // Invariant 3: what the upstream said not to cache is not served from the store to a
            // newcomer; the newcomer gets the upstream's next copy.
            session.refetch(type);
          }
        });
  }

  /**
   * A stream asked again for resources of {@code type} the group holds marked do_not_cache, which
   * it may not be served from the store (invariant 3): the upstream is asked for its next copy.
   */
  public void refetch(TypeUrl type) {
    executor.execute(
        () -> {
          if (!closed) {
            session.refetch(type);
          }
        });
  }

  /** A stream of {@code node} took the group. */
  void joined(Node node) {
    if (node.getId().equals(upstreamNode.getId())) {
      return;
    }
    executor.execute(
        () -> {
          if (!closed) {
            recentMembers.put(node.getId(), node);
            hasOtherMembers = true;
          }
        });
  }

  /**
   * Whether a node other than the upstream node has joined the group: whether the group audit has
   * anyone to ask about. Any thread.
   */
  public boolean hasOtherMembers() {
    return hasOtherMembers;
  }

  /**
   * What the group audit asks the upstream about, read on the group's executor: the recent members
   * other than the upstream node, and what the group subscribes to.
   *
   * @param members the most recently joined first
   * @param interest per type the group wants anything of, the union of its streams' interest
   */
  public record Membership(List<Node> members, Map<TypeUrl, Interest> interest) {
    public Membership {
      members = List.copyOf(members);
      interest = Map.copyOf(interest);
    }
  }

  /** The group's {@link Membership} now; empty once the group is closed. */
  public CompletableFuture<Membership> membership() {
    CompletableFuture<Membership> read = new CompletableFuture<>();
    executor.execute(
        () -> {
          if (closed) {
            read.complete(new Membership(List.of(), Map.of()));
            return;
          }
          List<Node> members = new ArrayList<>(recentMembers.values());
          java.util.Collections.reverse(members);
          read.complete(new Membership(members, interest.union()));
        });
    return read;
  }

  /** {@code watcher} is gone: its interest leaves the group's. */
  public void leave(GroupWatcher watcher) {
    executor.execute(
        () -> {
          Map<TypeUrl, Interest> changed = interest.leave(watcher);
          if (!closed) {
            changed.forEach(session::updateInterest);
          }
        });
  }

  private void onUpstreamUpdates(List<ResourceUpdate> updates) {
    long receivedAt = ticker.nanos();
    executor.execute(
        () -> {
          if (!closed) {
            apply(fromDisk.over(updates), receivedAt, true);
          }
        });
  }

  /**
   * The types that still hold state saved before the proxy restarted, not yet replaced by the
   * upstream's, and when each was saved; empty once the upstream has answered every one. Any
   * thread.
   */
  public Map<TypeUrl, Instant> fromDisk() {
    return fromDisk.types();
  }

  /**
   * When the group's copy of {@code name} was saved before the proxy restarted, while the upstream
   * has not answered for it; empty for a copy from the upstream. Any thread.
   */
  public Optional<Instant> savedAt(TypeUrl type, String name) {
    return fromDisk.savedAt(type, name);
  }

  /** Serves the state saved of this group before a restart, if any, until the upstream answers. */
  private void seed() {
    executor.assertCurrent();
    if (!closed) {
      List<ResourceUpdate> updates = fromDisk.load();
      if (!updates.isEmpty()) {
        apply(updates, ticker.nanos(), false);
      }
    }
  }

  /**
   * The upstream has not named the saved {@code names} of {@code type} within the not-found timeout
   * after answering the type: they are taken not to exist.
   */
  private void unconfirmed(TypeUrl type, Set<String> names) {
    executor.assertCurrent();
    if (!closed) {
      apply(List.of(ResourceUpdate.partial(type, List.of(), names, false)), ticker.nanos(), true);
    }
  }

  /**
   * Applies updates that reached the proxy at {@code receivedAt} to the store, and tells each
   * watcher of the types it wants that changed, and {@code saved} if {@code save}: every change but
   * the seeding with what was saved.
   */
  private void apply(List<ResourceUpdate> updates, long receivedAt, boolean save) {
    executor.assertCurrent();
    if (closed) {
      return;
    }
    List<TypeSnapshot> changed = new ArrayList<>();
    for (ResourceUpdate update : updates) {
      store
          .apply(update, receivedAt)
          .ifPresent(
              snapshot -> {
                LogFields.NONE
                    .group(key)
                    .type(snapshot.type())
                    .addTo(log.atDebug())
                    .log("group {}: {}", key, snapshot);
                changed.add(snapshot);
                armTtls(snapshot, update);
                metrics.stored(update.type());
                int uncacheable =
                    (int) update.resources().stream().filter(XdsResource::doNotCache).count();
                if (uncacheable > 0) {
                  metrics.relayedUncacheable(update.type(), uncacheable);
                }
              });
    }
    if (changed.isEmpty()) {
      return;
    }
    if (save) {
      saved.changed(this, updates);
    }
    List<TypeSnapshot> published = List.copyOf(changed);
    interest.forEachWatcher(
        (watcher, wanted) -> {
          List<TypeSnapshot> relevant = wantedOf(published, wanted);
          if (!relevant.isEmpty()) {
            watcher.onSnapshots(relevant);
          }
        });
  }

  /**
   * The snapshots of {@code changed} whose types a watcher wants: {@code changed} itself when it
   * wants them all, as nearly every watcher does, so thousands of watchers share one list.
   */
  private static List<TypeSnapshot> wantedOf(
      List<TypeSnapshot> changed, Map<TypeUrl, Interest> wanted) {
    int count = 0;
    for (TypeSnapshot snapshot : changed) {
      count += wanted.containsKey(snapshot.type()) ? 1 : 0;
    }
    if (count == changed.size() || count == 0) {
      return count == 0 ? List.of() : changed;
    }
    List<TypeSnapshot> some = new ArrayList<>(count);
    for (TypeSnapshot snapshot : changed) {
      if (wanted.containsKey(snapshot.type())) {
        some.add(snapshot);
      }
    }
    return some;
  }

  /**
   * "TTL": a resource the update brought or refreshed that has a TTL leaves the store when the TTL
   * lapses, unless a heartbeat or a new copy has replaced it by then (invariant 4).
   */
  private void armTtls(TypeSnapshot snapshot, ResourceUpdate update) {
    List<String> touched = new ArrayList<>(update.heartbeats());
    update.resources().forEach(resource -> touched.add(resource.name()));
    for (String name : touched) {
      XdsResource resource = snapshot.get(name);
      if (resource != null && resource.ttl().isPresent()) {
        long millis = Durations.toMillis(resource.ttl().get());
        timer.schedule(
            () -> executor.execute(() -> expire(snapshot.type(), resource)),
            millis,
            TimeUnit.MILLISECONDS);
      }
    }
  }

  private void expire(TypeUrl type, XdsResource resource) {
    executor.assertCurrent();
    if (!closed && store.snapshot(type).get(resource.name()) == resource) {
      lapses.log(
          LogFields.NONE.group(key).type(type),
          "group {}: the TTL of {} '{}' lapsed without a heartbeat; it is removed",
          key,
          type.shortName(),
          resource.name());
      metrics.expired(type);
      apply(
          List.of(ResourceUpdate.partial(type, List.of(), Set.of(resource.name()), false)),
          ticker.nanos(),
          true);
    }
  }

  void close() {
    executor.execute(
        () -> {
          closed = true;
          interest.clear();
          if (session != null) {
            session.close();
          }
        });
  }
}
