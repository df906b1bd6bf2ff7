package io.xdsproxy.core;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * The last good state of one node group as saved before the proxy restarted ("fail-static"): what
 * the group serves, marked as from disk, until its upstream answers.
 *
 * @param writtenAt when it was written (wall clock)
 * @param types each type's saved state
 */
public record SavedState(Instant writtenAt, Map<TypeUrl, Type> types) {

  public SavedState {
    types = Map.copyOf(types);
  }

  /**
   * One type's saved state.
   *
   * @param savedAt when the upstream last made this state: the age a status page shows (older than
   *     {@code writtenAt} when the type was itself from disk when written)
   * @param resources the resources, their TTLs what was left of them when they are handed out
   * @param complete whether they were every resource of the type (a wildcard had been answered)
   */
  public record Type(Instant savedAt, List<XdsResource> resources, boolean complete) {

    public Type {
      resources = List.copyOf(resources);
    }
  }
}
