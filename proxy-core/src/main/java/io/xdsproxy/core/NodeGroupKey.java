package io.xdsproxy.core;

import java.util.Objects;

/** The key of a node group: clients with equal keys share one upstream session and one store. */
public record NodeGroupKey(String value) {

  public NodeGroupKey {
    Objects.requireNonNull(value, "value");
  }

  /**
   * The key as a metric label: a key is made of a client's strings, so a long one is cut and hashed
   * ({@link ClientStrings#label}).
   */
  public String label() {
    return ClientStrings.label(value);
  }

  /**
   * The key as messages and log lines show it: a key is made of a client's strings, so a long one
   * is cut ({@link ClientStrings#bounded(String)}). Equal keys are compared by {@link #value}.
   */
  @Override
  public String toString() {
    return ClientStrings.bounded(value);
  }
}
