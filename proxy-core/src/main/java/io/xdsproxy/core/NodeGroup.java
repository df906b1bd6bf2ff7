package io.xdsproxy.core;

import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.UpstreamSource.UpstreamListener;
import io.xdsproxy.core.UpstreamSource.UpstreamSession;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
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
  private final Map<TypeUrl, InterestCount> interest = new HashMap<>();

  /**
   * The types that still hold state loaded from disk the upstream has not replaced yet: written on
   * the executor, an immutable map replaced on each change, read from any thread by status pages.
   */
  private volatile Map<TypeUrl, Provisional> provisional = Map.of();

  /**
   * Each watcher's interest by type; immutable maps, a few types each, replaced when one changes.
   */
  private final Map<GroupWatcher, Map<TypeUrl, Interest>> watchers = new HashMap<>();

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

  NodeGroup(NodeGroupKey key, Node upstreamNode, GroupContext shared) {
    this.key = key;
    this.upstreamNode = upstreamNode;
    this.saved = shared.saved();
    this.timer = shared.timer();
    this.ticker = shared.ticker();
    this.store = new ResourceStore(ticker);
    this.metrics = shared.metrics();
    UpstreamSource source = shared.source();
    this.executor = new SerialExecutor(shared.pool(), "node group " + key);
    // The saved state is in the store before the session can answer, or any stream subscribe.
    executor.execute(this::seed);
    executor.execute(
        () ->
            session =
                source.open(
                    key,
                    upstreamNode,
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
   */
  public void subscribe(GroupWatcher watcher, TypeUrl type, Interest wanted) {
    executor.execute(
        () -> {
          if (closed) {
            return;
          }
          Map<TypeUrl, Interest> byType = new HashMap<>(watchers.getOrDefault(watcher, Map.of()));
          Interest previous = wanted.isEmpty() ? byType.remove(type) : byType.put(type, wanted);
          watchers.put(watcher, Map.copyOf(byType));
          Interest before = previous == null ? Interest.NONE : previous;
          changeInterest(type, before, wanted);
          TypeSnapshot current = store.snapshot(type);
          if (previous == null && !wanted.isEmpty()) {
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
          Map<TypeUrl, Interest> wanted = new HashMap<>();
          interest.forEach(
              (type, count) -> {
                if (!count.interest().isEmpty()) {
                  wanted.put(type, count.interest());
                }
              });
          read.complete(new Membership(members, wanted));
        });
    return read;
  }

  /** {@code watcher} is gone: its interest leaves the group's. */
  public void leave(GroupWatcher watcher) {
    executor.execute(
        () -> {
          Map<TypeUrl, Interest> byType = watchers.remove(watcher);
          if (byType != null && !closed) {
            byType.forEach((type, previous) -> changeInterest(type, previous, Interest.NONE));
          }
        });
  }

  private void changeInterest(TypeUrl type, Interest previous, Interest next) {
    executor.assertCurrent();
    InterestCount count = interest.computeIfAbsent(type, t -> new InterestCount());
    Interest before = count.interest();
    count.remove(previous);
    count.add(next);
    Interest after = count.interest();
    if (after != before && !after.equals(before)) {
      session.updateInterest(type, after);
    }
  }

  private void onUpstreamUpdates(List<ResourceUpdate> updates) {
    long receivedAt = ticker.nanos();
    executor.execute(
        () -> {
          if (!closed) {
            apply(provisional.isEmpty() ? updates : overSaved(updates), receivedAt, true);
          }
        });
  }

  /**
   * The types that still hold state saved before the proxy restarted, not yet replaced by the
   * upstream's, and when each was saved; empty once the upstream has answered every one. Any
   * thread.
   */
  public Map<TypeUrl, Instant> fromDisk() {
    Map<TypeUrl, Instant> types = new HashMap<>();
    provisional.forEach((type, state) -> types.put(type, state.savedAt()));
    return types;
  }

  /**
   * When the group's copy of {@code name} was saved before the proxy restarted, while the upstream
   * has not answered for it; empty for a copy from the upstream. Any thread.
   */
  public Optional<Instant> savedAt(TypeUrl type, String name) {
    Provisional saved = provisional.get(type);
    return saved != null && saved.names().contains(name)
        ? Optional.of(saved.savedAt())
        : Optional.empty();
  }

  /** Serves the state saved of this group before a restart, if any, until the upstream answers. */
  private void seed() {
    executor.assertCurrent();
    Optional<SavedState> state = saved.load(key);
    if (state.isEmpty() || closed) {
      return;
    }
    Map<TypeUrl, Provisional> loaded = new HashMap<>();
    List<ResourceUpdate> updates = new ArrayList<>();
    state
        .get()
        .types()
        .forEach(
            (type, saved) -> {
              Set<String> names = new HashSet<>();
              saved.resources().forEach(resource -> names.add(resource.name()));
              loaded.put(type, new Provisional(saved.savedAt(), Set.copyOf(names), false));
              updates.add(
                  new ResourceUpdate(
                      type,
                      saved.resources(),
                      Set.of(),
                      Set.of(),
                      Set.of(),
                      true,
                      saved.complete()));
            });
    provisional = Map.copyOf(loaded);
    LogFields.NONE
        .group(key)
        .addTo(log.atInfo())
        .log(
            "group {}: serving the state saved at {} ({} type(s)) until the upstream answers",
            key,
            state.get().writtenAt(),
            loaded.size());
    apply(updates, ticker.nanos(), false);
  }

  /**
   * What {@code updates} from the upstream do to the state saved on disk. The upstream's state
   * replaces the saved one, but a saved resource leaves only when the upstream has said so: a
   * Listener or Cluster that vanished before would make Envoy drain or drop it for nothing. So the
   * saved resources of a type stay until its upstream names them (sent, heartbeated, removed), or
   * answers the whole type (a SotW wildcard answer, a Delta wildcard's complete one), or has
   * answered the type and left them out for the not-found timeout. A removal that comes before the
   * upstream has answered the type at all is the not-found timer of an upstream not reached, which
   * says nothing of a saved resource: it is held back.
   */
  private List<ResourceUpdate> overSaved(List<ResourceUpdate> updates) {
    executor.assertCurrent();
    List<ResourceUpdate> result = new ArrayList<>(updates.size());
    Map<TypeUrl, Provisional> remaining = new HashMap<>(provisional);
    for (ResourceUpdate update : updates) {
      Provisional saved = remaining.get(update.type());
      if (saved == null) {
        result.add(update);
        continue;
      }
      boolean answers =
          !update.resources().isEmpty()
              || !update.heartbeats().isEmpty()
              || update.replaceAll()
              || update.complete();
      Set<String> removed = new HashSet<>(update.removed());
      Set<String> left = new HashSet<>(saved.names());
      update.resources().forEach(resource -> left.remove(resource.name()));
      left.removeAll(update.heartbeats());
      left.removeAll(update.forgotten());
      if (answers || saved.answered()) {
        left.removeAll(update.removed());
      } else {
        removed.removeAll(saved.names());
      }
      if (update.replaceAll()) {
        left.clear(); // the update drops what it does not resend
      } else if (update.complete()) {
        // A complete answer names every resource the upstream has: a saved one it leaves out is
        // gone.
        removed.addAll(left);
        left.clear();
      }
      result.add(
          removed.equals(update.removed())
              ? update
              : new ResourceUpdate(
                  update.type(),
                  update.resources(),
                  removed,
                  update.forgotten(),
                  update.heartbeats(),
                  update.replaceAll(),
                  update.complete()));
      if (left.isEmpty()) {
        remaining.remove(update.type());
      } else {
        remaining.put(
            update.type(),
            new Provisional(saved.savedAt(), Set.copyOf(left), answers || saved.answered()));
        if (answers && !saved.answered()) {
          confirmLater(update.type());
        }
      }
    }
    provisional = Map.copyOf(remaining);
    return result;
  }

  /**
   * "Knowing When a Requested Resource Does Not Exist", for saved resources: once the upstream has
   * answered their type, those it has not named within the not-found timeout are taken not to
   * exist.
   */
  private void confirmLater(TypeUrl type) {
    timer.schedule(
        () ->
            executor.execute(
                () -> {
                  Provisional unconfirmed = provisional.get(type);
                  if (closed || unconfirmed == null) {
                    return;
                  }
                  Map<TypeUrl, Provisional> remaining = new HashMap<>(provisional);
                  remaining.remove(type);
                  provisional = Map.copyOf(remaining);
                  LogFields.NONE
                      .group(key)
                      .type(type)
                      .addTo(log.atInfo())
                      .log(
                          "group {}: the upstream has answered {} but not sent the saved {} within"
                              + " {}; they are taken not to exist",
                          key,
                          type.shortName(),
                          new java.util.TreeSet<>(unconfirmed.names()),
                          saved.confirmTimeout());
                  apply(
                      List.of(ResourceUpdate.partial(type, List.of(), unconfirmed.names(), false)),
                      ticker.nanos(),
                      true);
                }),
        saved.confirmTimeout().toMillis(),
        TimeUnit.MILLISECONDS);
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
    watchers.forEach(
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
          watchers.clear();
          if (session != null) {
            session.close();
          }
        });
  }

  /**
   * What is left of one type's saved state.
   *
   * @param savedAt when it was saved
   * @param names the saved resources the upstream has not named yet
   * @param answered whether the upstream has answered the type since
   */
  private record Provisional(Instant savedAt, Set<String> names, boolean answered) {}

  /**
   * How many streams want each name, so the union is updated in O(change) as streams come and go,
   * and rebuilt only when a name or the wildcard gains its first stream or loses its last. Streams
   * that subscribe alike hold one interned {@link Interest}, so streams are counted per interest
   * instance, and names per instance that wants them: a newcomer whose interest some stream holds
   * already costs a count, not one per name of what can be thousands.
   */
  private static final class InterestCount {
    private final Map<Interest, Integer> holders = new java.util.IdentityHashMap<>();
    private int wildcards;
    private final Map<String, Integer> names = new HashMap<>();
    private Interest cached = Interest.NONE;

    void add(Interest interest) {
      if (interest.isEmpty() || holders.merge(interest, 1, Integer::sum) > 1) {
        return;
      }
      if (interest.wildcard() && wildcards++ == 0) {
        cached = null;
      }
      for (String name : interest.names()) {
        if (names.merge(name, 1, Integer::sum) == 1) {
          cached = null;
        }
      }
    }

    /** Takes away {@code interest}, the same instance {@link #add} was given. */
    void remove(Interest interest) {
      if (interest.isEmpty()
          || holders.computeIfPresent(interest, (i, c) -> c == 1 ? null : c - 1) != null) {
        return;
      }
      if (interest.wildcard() && --wildcards == 0) {
        cached = null;
      }
      for (String name : interest.names()) {
        if (names.computeIfPresent(name, (n, c) -> c == 1 ? null : c - 1) == null) {
          cached = null;
        }
      }
    }

    Interest interest() {
      if (cached == null) {
        cached = new Interest(wildcards > 0, names.keySet());
      }
      return cached;
    }
  }
}
