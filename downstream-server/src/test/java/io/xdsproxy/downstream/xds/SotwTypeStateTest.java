package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.Snapshots;
import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * One type's logical stream of a SotW client, as {@link SotwStream#handle} drives it: rows of what
 * happened before (requests answered, store changes pushed), the store and the next step, and the
 * response that step is owed, by the names of its resources, or none.
 */
class SotwTypeStateTest {

  static XdsResource cluster(String name) {
    return XdsResource.of(
        name,
        Any.pack(Cluster.newBuilder().setName(name).setType(Cluster.DiscoveryType.EDS).build()));
  }

  /** An assignment; {@code weight} tells one version from another. */
  static XdsResource assignment(String name, int weight) {
    return XdsResource.of(
        name,
        Any.pack(
            ClusterLoadAssignment.newBuilder()
                .setClusterName(name)
                .addEndpoints(
                    LocalityLbEndpoints.newBuilder()
                        .setLoadBalancingWeight(com.google.protobuf.UInt32Value.of(weight)))
                .build()));
  }

  private static XdsResource doNotCache(XdsResource resource) {
    return new XdsResource(
        resource.name(),
        resource.version(),
        resource.body(),
        resource.aliases(),
        resource.ttl(),
        true);
  }

  private static final TypeSnapshot CLUSTERS =
      Snapshots.complete(TypeUrl.CLUSTER, List.of(cluster("a"), cluster("b")));

  /** Clusters as far as the upstream answered for "b" only: "a" is not heard of yet. */
  private static final TypeSnapshot CLUSTERS_HEARD_OF_B =
      Snapshots.next(
          TypeSnapshot.empty(TypeUrl.CLUSTER),
          ResourceUpdate.partial(TypeUrl.CLUSTER, List.of(cluster("b")), Set.of(), false));

  private static final TypeSnapshot ENDPOINTS =
      Snapshots.complete(TypeUrl.ENDPOINT, List.of(assignment("a", 1), assignment("b", 1)));

  /** {@link #ENDPOINTS} after "a" changed. */
  private static final TypeSnapshot ENDPOINTS_A_CHANGED =
      Snapshots.next(
          ENDPOINTS,
          ResourceUpdate.partial(TypeUrl.ENDPOINT, List.of(assignment("a", 2)), Set.of(), false));

  /** {@link #ENDPOINTS} after "a" and "b" got their own new versions. */
  private static final TypeSnapshot ENDPOINTS_AFTER_STALE =
      Snapshots.next(
          ENDPOINTS_A_CHANGED,
          ResourceUpdate.partial(TypeUrl.ENDPOINT, List.of(assignment("b", 3)), Set.of(), false));

  /** The store holds "d", which the upstream marked do_not_cache, from before the client asked. */
  private static final TypeSnapshot WITH_UNCACHEABLE =
      Snapshots.complete(
          TypeUrl.ENDPOINT, List.of(assignment("a", 1), doNotCache(assignment("d", 1))));

  /** The upstream's next copy of "d". */
  private static final TypeSnapshot UNCACHEABLE_REFRESHED =
      Snapshots.next(
          WITH_UNCACHEABLE,
          ResourceUpdate.partial(
              TypeUrl.ENDPOINT, List.of(doNotCache(assignment("d", 1))), Set.of(), false));

  /** Assignments as far as the upstream answered for "a": "d" is not heard of yet. */
  private static final TypeSnapshot ONLY_A =
      Snapshots.next(
          TypeSnapshot.empty(TypeUrl.ENDPOINT),
          ResourceUpdate.partial(TypeUrl.ENDPOINT, List.of(assignment("a", 1)), Set.of(), false));

  /** {@link #ONLY_A}, and then "d", marked do_not_cache, came. */
  private static final TypeSnapshot UNCACHEABLE_CAME =
      Snapshots.next(
          ONLY_A,
          ResourceUpdate.partial(
              TypeUrl.ENDPOINT, List.of(doNotCache(assignment("d", 1))), Set.of(), false));

  /** Something that happens to the stream. Its responses are numbered from nonce "1". */
  sealed interface Step {}

  /**
   * A request, the store being {@code store} when it is handled. {@code version} null stands for
   * the version of the response that {@code nonce} names, as an ACK carries it.
   */
  record Ask(TypeSnapshot store, List<String> names, String nonce, String version, String nack)
      implements Step {
    @Override
    public String toString() {
      String kind =
          nack != null
              ? "NACK of " + nonce
              : nonce.isEmpty()
                  ? "request"
                  : version != null && version.isEmpty()
                      ? "request again after " + nonce
                      : "ACK of " + nonce;
      return kind + " for " + names;
    }
  }

  /** The group's store changed to {@code store}: the stream pushes what it owes. */
  record Push(TypeSnapshot store) implements Step {
    @Override
    public String toString() {
      return "store now " + store.resources().keySet();
    }
  }

  /** A Cluster response owes the stream {@code names}' assignments (rule 18). */
  record Owe(Set<String> names) implements Step {
    @Override
    public String toString() {
      return "owed " + names;
    }
  }

  private static Ask first(TypeSnapshot store, String... names) {
    return new Ask(store, List.of(names), "", "", null);
  }

  private static Ask ack(TypeSnapshot store, String nonce, String... names) {
    return new Ask(store, List.of(names), nonce, null, null);
  }

  private static Ask nack(TypeSnapshot store, String nonce, String... names) {
    return new Ask(store, List.of(names), nonce, null, "rejected");
  }

  /**
   * The same names with an empty version after a response: the client asks for everything again.
   */
  private static Ask askAgain(TypeSnapshot store, String nonce, String... names) {
    return new Ask(store, List.of(names), nonce, "", null);
  }

  private static Arguments row(
      String says, TypeUrl type, List<Step> before, Step step, List<String> expected) {
    return Arguments.of(says, type, before, step, Optional.ofNullable(expected));
  }

  private static final List<String> NONE = null;

  static Stream<Arguments> rows() {
    return Stream.of(
        row(
            "a first wildcard request for clusters gets their whole state",
            TypeUrl.CLUSTER,
            List.of(),
            first(CLUSTERS),
            List.of("a", "b")),
        row(
            "a first request naming a cluster gets that cluster alone",
            TypeUrl.CLUSTER,
            List.of(),
            first(CLUSTERS, "a"),
            List.of("a")),
        row(
            "a first request naming assignments gets those",
            TypeUrl.ENDPOINT,
            List.of(),
            first(ENDPOINTS, "a"),
            List.of("a")),
        row(
            "a nonce from an earlier stream is taken before any response",
            TypeUrl.ENDPOINT,
            List.of(),
            ack(ENDPOINTS, "7", "a"),
            List.of("a")),
        row(
            "an ACK is not answered",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a", "b")),
            ack(ENDPOINTS, "1", "a", "b"),
            NONE),
        row(
            "after an ACK, a change sends what changed",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a", "b"), ack(ENDPOINTS, "1", "a", "b")),
            new Push(ENDPOINTS_A_CHANGED),
            List.of("a")),
        row(
            "a NACK is not answered with the rejected version again",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a", "b")),
            nack(ENDPOINTS, "1", "a", "b"),
            NONE),
        row(
            "after a NACK, the next version is sent (invariant 5)",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a", "b"), nack(ENDPOINTS, "1", "a", "b")),
            new Push(ENDPOINTS_A_CHANGED),
            List.of("a")),
        row(
            "a request with a stale nonce is ignored, the names it adds too",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a"), new Push(ENDPOINTS_A_CHANGED)),
            ack(ENDPOINTS_A_CHANGED, "1", "a", "b"),
            NONE),
        row(
            "a request with the latest nonce that adds a name gets it",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a"), new Push(ENDPOINTS_A_CHANGED)),
            ack(ENDPOINTS_A_CHANGED, "2", "a", "b"),
            List.of("b")),
        row(
            "a stale request does not stop the next change",
            TypeUrl.ENDPOINT,
            List.of(
                first(ENDPOINTS, "a", "b"),
                new Push(ENDPOINTS_A_CHANGED),
                ack(ENDPOINTS_A_CHANGED, "1", "a", "b")),
            new Push(ENDPOINTS_AFTER_STALE),
            List.of("b")),
        row(
            "an assignment the upstream lacks is answered with an empty one (rule 21)",
            TypeUrl.ENDPOINT,
            List.of(),
            first(ENDPOINTS, "a", "missing"),
            List.of("a", "missing")),
        row(
            "the empty assignment is sent once (rule 21)",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a", "missing"), ack(ENDPOINTS, "1", "a", "missing")),
            new Push(ENDPOINTS_A_CHANGED),
            List.of("a")),
        row(
            "a cluster the upstream lacks is left out of their whole state",
            TypeUrl.CLUSTER,
            List.of(),
            first(CLUSTERS, "a", "missing"),
            List.of("a")),
        row(
            "an assignment not heard of yet is waited for",
            TypeUrl.ENDPOINT,
            List.of(),
            first(TypeSnapshot.empty(TypeUrl.ENDPOINT), "x"),
            NONE),
        row(
            "clusters are not answered until every name asked for is heard of",
            TypeUrl.CLUSTER,
            List.of(),
            first(CLUSTERS_HEARD_OF_B, "a", "b"),
            NONE),
        row(
            "asking again resends everything subscribed to",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a", "b")),
            askAgain(ENDPOINTS, "1", "a", "b"),
            List.of("a", "b")),
        row(
            "a do_not_cache resource that came before the request is withheld (invariant 3)",
            TypeUrl.ENDPOINT,
            List.of(),
            first(WITH_UNCACHEABLE, "a", "d"),
            List.of("a")),
        row(
            "a withheld do_not_cache resource is sent as the upstream's next copy",
            TypeUrl.ENDPOINT,
            List.of(first(WITH_UNCACHEABLE, "a", "d")),
            new Push(UNCACHEABLE_REFRESHED),
            List.of("d")),
        row(
            "a stream subscribed when a do_not_cache resource comes gets it",
            TypeUrl.ENDPOINT,
            List.of(first(ONLY_A, "a", "d")),
            new Push(UNCACHEABLE_CAME),
            List.of("d")),
        row(
            "asking again does not get a do_not_cache resource from the store",
            TypeUrl.ENDPOINT,
            List.of(first(ONLY_A, "a", "d"), new Push(UNCACHEABLE_CAME)),
            askAgain(UNCACHEABLE_CAME, "2", "a", "d"),
            List.of("a")),
        row(
            "assignments owed after a Cluster response are sent unchanged (rule 18)",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a", "b"), ack(ENDPOINTS, "1", "a", "b")),
            new Owe(Set.of("a")),
            List.of("a")),
        row(
            "an owed assignment the client does not subscribe to is not sent (rule 18)",
            TypeUrl.ENDPOINT,
            List.of(first(ENDPOINTS, "a"), ack(ENDPOINTS, "1", "a")),
            new Owe(Set.of("b")),
            NONE));
  }

  /** A SotW type stream and what it was sent; its first step's store is the one it starts from. */
  private static final class Client {
    final SotwTypeState state;
    final Map<String, String> versions = new HashMap<>();
    final List<String> log = new ArrayList<>();
    int nonces;

    Client(TypeUrl type, TypeSnapshot initial) {
      state = new SotwTypeState(type, initial, false, Clock.systemUTC());
    }

    /** What {@link SotwStream#handle} and {@link ClientStream#send} do with {@code step}. */
    Optional<SotwOutgoing> take(Step step) {
      if (step instanceof Ask ask) {
        if (!state.isCurrent(ask.nonce())) {
          log.add(ask + " -> stale, ignored");
          return Optional.empty();
        }
        String version =
            ask.version() != null ? ask.version() : versions.getOrDefault(ask.nonce(), "");
        if (ask.nack() != null) {
          state.nack(ask.nack());
        } else if (state.asksAgain(ask.names(), version)) {
          state.askedAgain();
        } else if (!ask.nonce().isEmpty()) {
          state.ack(version);
        }
        state.subscribe(ask.names());
        state.update(ask.store());
      } else if (step instanceof Push push) {
        state.update(push.store());
      } else if (step instanceof Owe owe) {
        state.owe(owe.names());
      }
      Optional<SotwOutgoing> response = state.nextResponse(false);
      response.ifPresent(
          outgoing -> {
            long nonce = ++nonces;
            state.sent(outgoing, nonce);
            versions.put(Long.toString(nonce), outgoing.version());
          });
      log.add(
          step
              + " -> "
              + response
                  .map(outgoing -> "response " + nonces + " " + names(outgoing))
                  .orElse("none"));
      return response;
    }
  }

  private static List<String> names(SotwOutgoing outgoing) {
    return outgoing.included().stream().map(XdsResource::name).toList();
  }

  private static TypeSnapshot storeOf(Step step) {
    return step instanceof Ask ask ? ask.store() : step instanceof Push push ? push.store() : null;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("rows")
  void aStepIsOwedTheResponseOfItsRow(
      String says, TypeUrl type, List<Step> before, Step step, Optional<List<String>> expected) {
    TypeSnapshot initial = storeOf(before.isEmpty() ? step : before.get(0));
    Client client = new Client(type, initial);
    before.forEach(client::take);

    Optional<SotwOutgoing> response = client.take(step);

    if (expected.isEmpty()) {
      assertThat(response).as("%s; the exchange: %s", says, client.log).isEmpty();
    } else {
      assertThat(response)
          .as("%s; the exchange: %s", says, client.log)
          .hasValueSatisfying(
              outgoing ->
                  assertThat(names(outgoing))
                      .as("%s; the exchange: %s", says, client.log)
                      .containsExactlyInAnyOrderElementsOf(expected.get()));
    }
  }

  @Test
  void aNonceIsRecognisedByItsDigitsAlone() {
    assertThat(TypeState.spells("1", 1)).isTrue();
    assertThat(TypeState.spells("907", 907)).isTrue();
    assertThat(TypeState.spells(Long.toString(Long.MAX_VALUE), Long.MAX_VALUE)).isTrue();
    assertThat(TypeState.spells("", 7)).as("no nonce").isFalse();
    assertThat(TypeState.spells("0907", 907)).as("a leading zero").isFalse();
    assertThat(TypeState.spells("97", 907)).as("a digit short").isFalse();
    assertThat(TypeState.spells("9070", 907)).as("a digit more").isFalse();
    assertThat(TypeState.spells("917", 907)).isFalse();
    assertThat(TypeState.spells("90a", 907)).isFalse();
    assertThat(TypeState.spells("-907", 907)).isFalse();
  }

  @Test
  void newcomersThatSubscribeAlikeShareOneFirstResponse() {
    SotwTypeState one = new SotwTypeState(TypeUrl.ENDPOINT, ENDPOINTS, false, Clock.systemUTC());
    SotwTypeState two = new SotwTypeState(TypeUrl.ENDPOINT, ENDPOINTS, false, Clock.systemUTC());
    one.subscribe(List.of("a", "b"));
    two.subscribe(List.of("a", "b"));

    SotwOutgoing first = one.nextResponse(false).orElseThrow();
    assertThat(two.nextResponse(false)).containsSame(first);
    assertThat(names(first)).containsExactlyInAnyOrder("a", "b");
  }

  @Test
  void anAckIsFoundToRepeatTheNamesOfTheRequestBeforeItWhateverListHoldsThem() {
    SotwTypeState state = new SotwTypeState(TypeUrl.ENDPOINT, ENDPOINTS, false, Clock.systemUTC());
    List<String> many = IntStream.range(0, 20).mapToObj(i -> "c" + i).toList();
    List<String> others = IntStream.range(1, 21).mapToObj(i -> "c" + i).toList();

    assertThat(state.subscribe(many)).isTrue();

    assertThat(state.repeats(many)).isTrue();
    assertThat(state.repeats(new ArrayList<>(many))).as("an equal list").isTrue();
    assertThat(state.repeats(others)).isFalse();
    assertThat(state.subscribe(others)).isTrue();
    assertThat(state.repeats(many)).as("the list of the request before the last").isFalse();
    assertThat(state.repeats(others)).isTrue();
    assertThat(state.subscribe(List.of("a"))).isTrue();
    assertThat(state.repeats(others)).isFalse();
    assertThat(state.repeats(List.of("a"))).isTrue();
  }

  @Test
  void aNewcomerThatChangesItsNamesBeforeItsFirstResponseIsOwedTheNewOnes() {
    SotwTypeState state = new SotwTypeState(TypeUrl.ENDPOINT, ENDPOINTS, false, Clock.systemUTC());
    state.subscribe(List.of("a")); // owed: its subscription's own set, which must not change
    state.owe(Set.of("a"));
    state.subscribe(List.of("b"));

    assertThat(names(state.nextResponse(false).orElseThrow())).containsExactly("b");
    assertThat(Subscription.NONE.sotw(List.of("a")).names()).containsExactly("a");
  }

  @Test
  void anAckRecordsTheVersionAndANackItsMessage() {
    Client client = new Client(TypeUrl.ENDPOINT, ENDPOINTS);
    SotwOutgoing sent = client.take(first(ENDPOINTS, "a")).orElseThrow();
    client.take(ack(ENDPOINTS, "1", "a"));
    assertThat(client.state.ackedVersion()).isEqualTo(sent.version());
    client.take(new Push(ENDPOINTS_A_CHANGED));
    assertThat(client.state.ackedVersion())
        .as("a newer response sent, not yet answered")
        .isEqualTo(sent.version());

    client.take(nack(ENDPOINTS_A_CHANGED, "2", "a"));

    assertThat(client.state.ackedVersion())
        .as("the ACKed version stays that of the ACKed response")
        .isEqualTo(sent.version());
    assertThat(client.state.lastNackMessage()).contains("rejected");
  }

  @Test
  void theClustersOfAClusterResponseAreGivenToWarmOnce() {
    Client client = new Client(TypeUrl.CLUSTER, CLUSTERS);
    client.take(first(CLUSTERS));

    assertThat(client.state.takeWarming(true))
        .as("a SotW client claims nothing on connecting")
        .isEmpty();
    Client again = new Client(TypeUrl.CLUSTER, CLUSTERS);
    again.take(first(CLUSTERS));
    assertThat(again.state.takeWarming(false))
        .extracting(XdsResource::name)
        .containsExactlyInAnyOrder("a", "b");
    assertThat(again.state.takeWarming(false)).as("given once").isEmpty();
  }
}
