package io.xdsproxy.app.testing;

import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.Message;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.xdsproxy.core.TypeUrl;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.awaitility.core.ConditionTimeoutException;

/**
 * Invariant 2 of DESIGN.md as a test's last word: every client holds, for every type it subscribed
 * to, exactly what the upstream serves its node group (all of it for a wildcard, the names that
 * exist otherwise), byte for byte, and has ACKed it. The clients' responses are read and answered
 * while it waits. A client's node group is its node's cluster, the proxy's default key.
 *
 * <p>When the bound passes, the failure names each client that differs (node id, group, variant)
 * and per type what is missing, extra or stale, with the end of what it exchanged with the proxy.
 */
public final class ConvergenceChecker {

  private static final int CLIENTS_SHOWN = 20;
  private static final int TRANSCRIPTS_SHOWN = 3;
  private static final int TRANSCRIPT_LINES = 12;

  /** What the upstream serves, per node group, per type, by name. */
  private final Map<String, Map<TypeUrl, Map<String, Any>>> upstream = new HashMap<>();

  private final List<VariantClient> clients = new ArrayList<>();

  /** The upstream serves {@code snapshot} to {@code group}. */
  public ConvergenceChecker upstream(String group, Snapshot snapshot) {
    return upstream(group, state(snapshot));
  }

  /** The upstream serves {@code state} (per type, by name) to {@code group}. */
  public ConvergenceChecker upstream(String group, Map<TypeUrl, Map<String, Any>> state) {
    upstream.put(group, Map.copyOf(state));
    return this;
  }

  public ConvergenceChecker clients(Collection<VariantClient> more) {
    clients.addAll(more);
    return this;
  }

  public ConvergenceChecker client(VariantClient client) {
    clients.add(client);
    return this;
  }

  /**
   * What java-control-plane serves from {@code snapshot}: its resources of the four types, packed
   * as it packs them.
   */
  public static Map<TypeUrl, Map<String, Any>> state(Snapshot snapshot) {
    Map<TypeUrl, Map<String, Any>> state = new HashMap<>();
    for (TypeUrl type :
        List.of(TypeUrl.CLUSTER, TypeUrl.ENDPOINT, TypeUrl.LISTENER, TypeUrl.ROUTE)) {
      Map<String, Any> byName = new HashMap<>();
      snapshot
          .resources(type.url())
          .forEach((name, versioned) -> byName.put(name, Any.pack((Message) versioned.resource())));
      state.put(type, byName);
    }
    return state;
  }

  /**
   * Waits up to {@code bound}, reading and answering every client's responses, until every client
   * converged; fails naming what differs otherwise.
   */
  public void awaitConverged(Duration bound) {
    try {
      await()
          .atMost(bound)
          .pollDelay(Duration.ZERO)
          .pollInterval(Duration.ofMillis(50))
          .until(
              () -> {
                clients.forEach(VariantClient::pump);
                return differences().isEmpty();
              });
    } catch (ConditionTimeoutException e) {
      clients.forEach(VariantClient::pump);
      List<ClientDifference> differences = differences();
      if (!differences.isEmpty()) {
        throw new AssertionError(report(differences, bound), e);
      }
    }
  }

  /**
   * What each client that has not converged lacks or has too much of, now; empty when all
   * converged.
   */
  public List<ClientDifference> differences() {
    List<ClientDifference> found = new ArrayList<>();
    for (VariantClient client : clients) {
      String group = client.node().getCluster();
      Map<TypeUrl, Map<String, Any>> served = upstream.getOrDefault(group, Map.of());
      List<String> lines = new ArrayList<>();
      if (client.anyStreamEnded()) {
        lines.add("a stream of this client has ended");
      }
      client
          .subscriptions()
          .forEach(
              (type, names) -> {
                Map<String, Any> available = served.getOrDefault(type, Map.of());
                Map<String, Any> expected = new TreeMap<>();
                available.forEach(
                    (name, body) -> {
                      if (names.isEmpty() || names.contains(name)) {
                        expected.put(name, body);
                      }
                    });
                typeDifference(type, names, expected, client.held(type), client.heldVersions(type))
                    .ifPresent(lines::add);
              });
      if (!lines.isEmpty()) {
        found.add(new ClientDifference(client, group, lines));
      }
    }
    return found;
  }

  private static java.util.Optional<String> typeDifference(
      TypeUrl type,
      Set<String> names,
      Map<String, Any> expected,
      Map<String, Any> held,
      Map<String, String> versions) {
    Set<String> missing = new TreeSet<>(expected.keySet());
    missing.removeAll(held.keySet());
    Set<String> extra = new TreeSet<>(held.keySet());
    extra.removeAll(expected.keySet());
    List<String> stale = new ArrayList<>();
    for (String name : new TreeSet<>(expected.keySet())) {
      Any have = held.get(name);
      if (have != null && !have.toByteString().equals(expected.get(name).toByteString())) {
        stale.add(
            name
                + " (held at version "
                + versions.get(name)
                + ", "
                + have.getSerializedSize()
                + " bytes; upstream's "
                + expected.get(name).getSerializedSize()
                + " bytes differ)");
      }
    }
    if (missing.isEmpty() && extra.isEmpty() && stale.isEmpty()) {
      return java.util.Optional.empty();
    }
    StringBuilder line =
        new StringBuilder(type.shortName())
            .append(
                names.isEmpty()
                    ? " (wildcard)"
                    : " (names " + abbreviated(new TreeSet<>(names)) + ")")
            .append(": holds ")
            .append(held.size())
            .append(", upstream has ")
            .append(expected.size());
    if (!missing.isEmpty()) {
      line.append("; missing ").append(abbreviated(missing));
    }
    if (!extra.isEmpty()) {
      line.append("; extra ").append(abbreviated(extra));
    }
    if (!stale.isEmpty()) {
      line.append("; stale ").append(abbreviated(stale));
    }
    return java.util.Optional.of(line.toString());
  }

  private static String abbreviated(Collection<String> items) {
    List<String> shown = items.stream().limit(10).toList();
    return shown
        + (items.size() > shown.size() ? " and " + (items.size() - shown.size()) + " more" : "");
  }

  private String report(List<ClientDifference> differences, Duration bound) {
    StringBuilder report =
        new StringBuilder()
            .append(differences.size())
            .append(" of ")
            .append(clients.size())
            .append(" clients did not converge within ")
            .append(bound)
            .append(" to what the upstream serves:\n");
    for (int i = 0; i < Math.min(CLIENTS_SHOWN, differences.size()); i++) {
      ClientDifference difference = differences.get(i);
      report.append("  ").append(difference.describe()).append('\n');
      if (i < TRANSCRIPTS_SHOWN) {
        for (TypeUrl type : difference.client().subscriptions().keySet()) {
          List<String> lines = difference.client().transcript(type).lines().toList();
          report
              .append("    exchanged on the stream of ")
              .append(type.shortName())
              .append(" (last ")
              .append(Math.min(TRANSCRIPT_LINES, lines.size()))
              .append(" of ")
              .append(lines.size())
              .append("):\n");
          lines
              .subList(Math.max(0, lines.size() - TRANSCRIPT_LINES), lines.size())
              .forEach(line -> report.append("      ").append(line).append('\n'));
          if (difference.client().variant().ads()) {
            break;
          }
        }
      }
    }
    if (differences.size() > CLIENTS_SHOWN) {
      report.append("  and ").append(differences.size() - CLIENTS_SHOWN).append(" more clients\n");
    }
    return report.toString();
  }

  /** One client that has not converged, and what differs, a line per type. */
  public record ClientDifference(VariantClient client, String group, List<String> lines) {
    public String describe() {
      return "client "
          + client.node().getId()
          + " (group "
          + group
          + ", "
          + client.variant()
          + "): "
          + String.join("\n    ", lines);
    }
  }
}
