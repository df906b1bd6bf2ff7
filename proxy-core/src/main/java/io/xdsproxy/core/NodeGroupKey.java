package io.xdsproxy.core;

import java.util.Objects;

/** The key of a node group: clients with equal keys share one upstream session and one store. */
public record NodeGroupKey(String value) {

  public NodeGroupKey {
    Objects.requireNonNull(value, "value");
  }

  @Override
  public String toString() {
    return value;
  }
}
