package io.xdsproxy.core;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import io.xdsproxy.core.UpstreamSource.AuditedType;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * How the group audit compares what the upstream sends one member node with what the group holds:
 * by name, and by content. Not by version: a control plane may version each node's copy on its own
 * (istiod versions every push), and a node entitled to the group's configuration gets the same
 * resources under other versions. Left out, as they would give false alarms: resources marked
 * do_not_cache on either side (a fresh copy each delivery, invariant 3), names the group changed
 * while the audit ran (an update in flight), names the group has not heard of yet, and types the
 * group or the node has not been answered for.
 */
public final class AuditComparison {

  private AuditComparison() {}

  /** How one resource differs. */
  public enum Kind {
    /** The group holds it; the upstream does not send it to the node. */
    ONLY_IN_GROUP,
    /** The upstream sends it to the node; the group does not hold it. */
    ONLY_FOR_NODE,
    /** Both have it, with different content. */
    CONTENT;

    /** As metrics, logs and the config dump show it. */
    public String label() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /** One resource the node would be served differently from the group. */
  public record Difference(TypeUrl type, String name, Kind kind) {}

  /**
   * What differs between the group and the node's {@code answers}.
   *
   * @param wanted what the audit asked for, per type: the group's interest
   * @param before the group's snapshot of each type when the audit started
   * @param now the group's snapshot of a type now, after the answers came
   * @return the differences, by type (push order) and name
   */
  public static List<Difference> compare(
      Map<TypeUrl, Interest> wanted,
      Map<TypeUrl, TypeSnapshot> before,
      Function<TypeUrl, TypeSnapshot> now,
      Map<TypeUrl, AuditedType> answers) {
    List<Difference> differences = new ArrayList<>();
    for (Map.Entry<TypeUrl, Interest> entry : new TreeMap<>(wanted).entrySet()) {
      TypeUrl type = entry.getKey();
      Interest interest = entry.getValue();
      AuditedType answer = answers.get(type);
      TypeSnapshot group = now.apply(type);
      if (answer == null || !group.isReceived()) {
        continue;
      }
      TypeSnapshot earlier = before.getOrDefault(type, group);
      Optional<Set<String>> inFlight = group.changedSince(earlier);
      if (inFlight.isEmpty()) {
        continue; // the group changed too much meanwhile to tell which names: the next audit will
      }
      Set<String> names = new TreeSet<>(interest.names());
      if (interest.wildcard()) {
        names.addAll(group.resources().keySet());
        names.addAll(answer.resources().keySet());
      }
      for (String name : names) {
        if (inFlight.get().contains(name)) {
          continue;
        }
        XdsResource held = group.get(name);
        XdsResource sent = answer.resources().get(name);
        if (held != null && held.doNotCache() || sent != null && sent.doNotCache()) {
          continue;
        }
        if (held == null && group.state(name) == TypeSnapshot.NameState.UNKNOWN) {
          continue;
        }
        if (held == null && sent != null) {
          differences.add(new Difference(type, name, Kind.ONLY_FOR_NODE));
        } else if (held != null && sent == null) {
          differences.add(new Difference(type, name, Kind.ONLY_IN_GROUP));
        } else if (held != null && !sameContent(type, held, sent)) {
          differences.add(new Difference(type, name, Kind.CONTENT));
        }
      }
    }
    return List.copyOf(differences);
  }

  /**
   * Whether the two copies are the same resource: the same bytes, or, where the type is known, the
   * same message (a map field may be serialized in any order).
   */
  static boolean sameContent(TypeUrl type, XdsResource one, XdsResource other) {
    if (one.body().equals(other.body())) {
      return true;
    }
    if (!one.body().getTypeUrl().equals(other.body().getTypeUrl())) {
      return false;
    }
    Optional<Message> prototype = type.prototype();
    if (prototype.isEmpty()) {
      return false;
    }
    try {
      Message parsedOne = prototype.get().getParserForType().parseFrom(one.body().getValue());
      Message parsedOther = prototype.get().getParserForType().parseFrom(other.body().getValue());
      return parsedOne.equals(parsedOther);
    } catch (InvalidProtocolBufferException e) {
      return false;
    }
  }
}
