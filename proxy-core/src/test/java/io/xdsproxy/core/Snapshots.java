package io.xdsproxy.core;

import java.util.List;

/** Snapshots for tests of other modules, made as a node group's store makes them. */
public final class Snapshots {

  private Snapshots() {}

  /** The complete state {@code resources} of {@code type}, as a wildcard answer makes it. */
  public static TypeSnapshot complete(TypeUrl type, List<XdsResource> resources) {
    return new ResourceStore(Ticker.SYSTEM)
        .apply(ResourceUpdate.complete(type, resources))
        .orElseThrow();
  }

  /** The snapshot after {@code current}, as its store makes it when {@code update} comes. */
  public static TypeSnapshot next(TypeSnapshot current, ResourceUpdate update) {
    return current.apply(update, System.nanoTime());
  }
}
