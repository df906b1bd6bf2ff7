package io.xdsproxy.core;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/**
 * Where node groups keep their last good state across the proxy's restarts ("fail-static"): a group
 * opened with saved state serves it until its upstream answers, and tells this of every change of
 * its store after, so that the state can be saved again. The writing is done elsewhere, off the
 * groups' executors: disk latency never reaches a stream.
 */
public interface SavedStates {

  /** Nothing is saved, and nothing was. */
  SavedStates NONE =
      new SavedStates() {
        @Override
        public Optional<SavedState> load(NodeGroupKey key) {
          return Optional.empty();
        }

        @Override
        public void changed(NodeGroup group, List<ResourceUpdate> updates) {}

        @Override
        public Duration confirmTimeout() {
          return Duration.ZERO;
        }
      };

  /**
   * The state saved of group {@code key}, resources whose TTL lapsed since left out and the others'
   * TTLs counted down to now; empty when there is none. Called on the group's executor as it opens.
   */
  Optional<SavedState> load(NodeGroupKey key);

  /**
   * {@code group}'s store changed by {@code updates}, from its upstream or its own timed rules (not
   * by what {@link #load} gave it). Called on the group's executor: records and returns at once.
   */
  void changed(NodeGroup group, List<ResourceUpdate> updates);

  /**
   * How long a saved resource may stay after its upstream has answered its type without it: as the
   * upstream's not-found timeout ("Knowing When a Requested Resource Does Not Exist").
   */
  Duration confirmTimeout();
}
