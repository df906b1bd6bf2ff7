package io.xdsproxy.core;

import java.util.List;

/** Snapshots for tests of other modules, made as a node group's store makes them. */
public final class Snapshots {

  private Snapshots() {}

  /** The complete state {@code resources} of {@code type}, as a wildcard answer makes it. */
  public static TypeSnapshot complete(TypeUrl type, List<XdsResource> resources) {
    return new ResourceStore().apply(ResourceUpdate.complete(type, resources)).orElseThrow();
  }
}
