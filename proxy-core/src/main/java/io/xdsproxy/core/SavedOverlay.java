package io.xdsproxy.core;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a node group serves of the state saved of it before the proxy restarted ({@link
 * SavedStates}), until its upstream has replaced it: which types and names still come from disk,
 * and what the upstream's updates do to them. Written on the group's executor; what is left is an
 * immutable map replaced on each change, read from any thread by status pages.
 */
final class SavedOverlay {

  private static final Logger log = LoggerFactory.getLogger(NodeGroup.class);

  private final NodeGroupKey key;
  private final SavedStates saved;
  private final ScheduledExecutorService timer;
  private final SerialExecutor executor;

  /** Told, on the executor, of saved names the upstream did not confirm: they do not exist. */
  private final BiConsumer<TypeUrl, Set<String>> unconfirmed;

  private volatile Map<TypeUrl, Provisional> provisional = Map.of();

  /**
   * @param unconfirmed told on {@code executor} of the saved names of a type that the upstream has
   *     answered without naming them within the not-found timeout
   */
  SavedOverlay(
      NodeGroupKey key,
      SavedStates saved,
      ScheduledExecutorService timer,
      SerialExecutor executor,
      BiConsumer<TypeUrl, Set<String>> unconfirmed) {
    this.key = key;
    this.saved = saved;
    this.timer = timer;
    this.executor = executor;
    this.unconfirmed = unconfirmed;
  }

  /**
   * The types that still hold saved state, and when each was saved; empty once the upstream has
   * answered every one. Any thread.
   */
  Map<TypeUrl, Instant> types() {
    Map<TypeUrl, Instant> types = new HashMap<>();
    provisional.forEach((type, state) -> types.put(type, state.savedAt()));
    return types;
  }

  /**
   * When the group's copy of {@code name} was saved, while the upstream has not answered for it;
   * empty for a copy from the upstream. Any thread.
   */
  Optional<Instant> savedAt(TypeUrl type, String name) {
    Provisional state = provisional.get(type);
    return state != null && state.names().contains(name)
        ? Optional.of(state.savedAt())
        : Optional.empty();
  }

  /** The state saved of the group, as updates that seed its store; empty if none was saved. */
  List<ResourceUpdate> load() {
    executor.assertCurrent();
    Optional<SavedState> state = saved.load(key);
    if (state.isEmpty()) {
      return List.of();
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
    return updates;
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
  List<ResourceUpdate> over(List<ResourceUpdate> updates) {
    executor.assertCurrent();
    if (provisional.isEmpty()) {
      return updates;
    }
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
                  Provisional left = provisional.get(type);
                  if (left == null) {
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
                          new TreeSet<>(left.names()),
                          saved.confirmTimeout());
                  unconfirmed.accept(type, left.names());
                }),
        saved.confirmTimeout().toMillis(),
        TimeUnit.MILLISECONDS);
  }

  /**
   * What is left of one type's saved state.
   *
   * @param savedAt when it was saved
   * @param names the saved resources the upstream has not named yet
   * @param answered whether the upstream has answered the type since
   */
  private record Provisional(Instant savedAt, Set<String> names, boolean answered) {}
}
