package io.xdsproxy.core;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The key of a node group: clients with equal keys share one upstream session and one store. A key
 * of several parts joins them with {@code |}, each part's own {@code %} and {@code |} escaped, so
 * that no client can make its parts spell another group's key (a cluster {@code a|b} beside a
 * metadata value {@code c} is not the cluster {@code a} beside {@code b|c}).
 */
public record NodeGroupKey(String value) {

  public NodeGroupKey {
    Objects.requireNonNull(value, "value");
  }

  /** The key made of {@code parts}, in order. */
  public static NodeGroupKey of(List<String> parts) {
    StringBuilder key = new StringBuilder();
    for (int i = 0; i < parts.size(); i++) {
      if (i > 0) {
        key.append('|');
      }
      key.append(parts.get(i).replace("%", "%25").replace("|", "%7C"));
    }
    return new NodeGroupKey(key.toString());
  }

  /** The parts the key was made of ({@link #of}), unescaped. */
  public List<String> parts() {
    List<String> parts = new ArrayList<>();
    for (String part : value.split("\\|", -1)) {
      parts.add(part.replace("%7C", "|").replace("%25", "%"));
    }
    return parts;
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
