package io.xdsproxy.downstream.xds;

import static io.xdsproxy.downstream.xds.SotwTypeStateTest.assignment;
import static io.xdsproxy.downstream.xds.SotwTypeStateTest.cluster;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.Snapshots;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * When a stream writes what, alone: a transport that is ready or not, and the group's snapshots as
 * the test sets them.
 */
class PushSchedulerTest {

  private static final TypeSnapshot CLUSTERS =
      Snapshots.complete(TypeUrl.CLUSTER, List.of(cluster("a")));
  private static final TypeSnapshot ENDPOINTS =
      Snapshots.complete(TypeUrl.ENDPOINT, List.of(assignment("a", 1)));
  private static final TypeSnapshot ENDPOINTS_CHANGED =
      Snapshots.next(
          ENDPOINTS,
          ResourceUpdate.partial(TypeUrl.ENDPOINT, List.of(assignment("a", 2)), Set.of(), false));
  private static final TypeSnapshot ENDPOINTS_CHANGED_AGAIN =
      Snapshots.next(
          ENDPOINTS_CHANGED,
          ResourceUpdate.partial(TypeUrl.ENDPOINT, List.of(assignment("a", 3)), Set.of(), false));

  /** A transport that records what is written, ready as the test says. */
  private static final class Recording implements PushScheduler.Transport {
    boolean ready = true;
    final List<DiscoveryResponse> written = new ArrayList<>();
    final Map<TypeUrl, Long> fannedOut = new HashMap<>();

    @Override
    public boolean isReady() {
      return ready;
    }

    @Override
    public void write(TypeUrl type, EncodedResponse response) {
      written.add(response.toSotw());
    }

    @Override
    public void fannedOut(TypeUrl type, long receivedAt) {
      fannedOut.merge(
          type,
          receivedAt,
          (a, b) -> {
            throw new AssertionError("fanned out twice: " + type);
          });
    }

    List<String> types() {
      return written.stream()
          .map(response -> TypeUrl.parse(response.getTypeUrl()).shortName())
          .toList();
    }
  }

  private final Recording transport = new Recording();
  private final PushScheduler<SotwTypeState> ads = new PushScheduler<>(transport, true);
  private final Map<TypeUrl, TypeSnapshot> store = new TreeMap<>();

  /** The client asks for {@code type}'s resource "a", as SotwStream handles a first request. */
  private SotwTypeState ask(TypeUrl type, TypeSnapshot snapshot) {
    store.put(type, snapshot);
    SotwTypeState state =
        ads.state(type, t -> new SotwTypeState(t, snapshot, false, Clock.systemUTC()));
    state.subscribe(List.of("a"));
    state.update(snapshot);
    ads.send(type);
    return state;
  }

  private void groupChanged(TypeSnapshot snapshot) {
    store.put(snapshot.type(), snapshot);
    ads.catchUp(store::get);
  }

  @Test
  void aResponseIsWrittenAtOnceWhenTheTransportIsReady() {
    ask(TypeUrl.ENDPOINT, ENDPOINTS);

    assertThat(transport.types()).containsExactly(TypeUrl.ENDPOINT.shortName());
    assertThat(transport.written.get(0).getNonce()).isEqualTo("1");
  }

  @Test
  void aStreamAwaitsItsFirstStateUntilItsClientAnsweredAResponseOfEveryTypeAskedFor() {
    transport.ready = false;
    ask(TypeUrl.CLUSTER, CLUSTERS);
    assertThat(ads.awaitsFirstState()).as("a response owed, the transport not ready").isTrue();

    transport.ready = true;
    ads.flushBlocked();
    assertThat(ads.awaitsFirstState())
        .as("clusters written, not yet answered: the ACK is a newcomer's work too")
        .isTrue();
    ads.replied(TypeUrl.CLUSTER);
    assertThat(ads.awaitsFirstState()).as("clusters ACKed").isFalse();

    ask(TypeUrl.ENDPOINT, ENDPOINTS);
    assertThat(ads.awaitsFirstState()).as("a type asked for later, written").isTrue();
    ads.replied(TypeUrl.ENDPOINT);
    assertThat(ads.awaitsFirstState()).as("its first state answered (a NACK counts)").isFalse();

    groupChanged(ENDPOINTS_CHANGED);
    assertThat(ads.awaitsFirstState()).as("an update to a type already answered").isFalse();
    ads.replied(TypeUrl.ENDPOINT);
    assertThat(ads.awaitsFirstState()).as("answered again").isFalse();
  }

  @Test
  void whatTheTransportWasNotReadyForIsWrittenWhenItIsFromTheNewestStateOnce() {
    ask(TypeUrl.ENDPOINT, ENDPOINTS);
    transport.ready = false;

    groupChanged(ENDPOINTS_CHANGED);
    groupChanged(ENDPOINTS_CHANGED_AGAIN);
    ads.flushBlocked();
    assertThat(transport.written).as("nothing while not ready").hasSize(1);

    transport.ready = true;
    ads.flushBlocked();
    ads.flushBlocked();

    assertThat(transport.written).as("one response for the two changes, not a backlog").hasSize(2);
    assertThat(transport.written.get(1).getVersionInfo())
        .isEqualTo(ENDPOINTS_CHANGED_AGAIN.version());
    assertThat(transport.written.get(1).getNonce()).isEqualTo("2");
  }

  @Test
  void typesThatChangedTogetherArePushedInPushOrder() {
    ask(TypeUrl.ENDPOINT, ENDPOINTS);
    ask(TypeUrl.CLUSTER, CLUSTERS);
    transport.written.clear();
    TypeSnapshot clustersChanged =
        Snapshots.next(
            CLUSTERS,
            ResourceUpdate.partial(
                TypeUrl.CLUSTER,
                List.of(
                    XdsResource.of(
                        "a",
                        Any.pack(
                            Cluster.newBuilder()
                                .setName("a")
                                .setType(Cluster.DiscoveryType.EDS)
                                .setConnectTimeout(
                                    com.google.protobuf.Duration.newBuilder().setSeconds(2))
                                .build()))),
                Set.of(),
                false));
    store.put(TypeUrl.CLUSTER, clustersChanged);
    store.put(TypeUrl.ENDPOINT, ENDPOINTS_CHANGED);

    ads.catchUp(store::get);

    assertThat(transport.types())
        .containsExactly(TypeUrl.CLUSTER.shortName(), TypeUrl.ENDPOINT.shortName());
  }

  @Test
  void catchingUpWritesTheTypesWhoseGroupSnapshotIsNewerThanTheStreamsAndNoOther() {
    ask(TypeUrl.ENDPOINT, ENDPOINTS);
    ask(TypeUrl.CLUSTER, CLUSTERS);
    transport.written.clear();

    ads.catchUp(store::get);
    assertThat(transport.written).as("the group holds nothing newer").isEmpty();

    store.put(TypeUrl.ENDPOINT, ENDPOINTS_CHANGED);
    assertThat(ads.behind(store::get)).as("assignments are behind").isTrue();

    ads.catchUp(store::get);
    ads.catchUp(store::get);
    assertThat(transport.types())
        .as("the newer assignments, once")
        .containsExactly(TypeUrl.ENDPOINT.shortName());
    assertThat(transport.written.get(0).getVersionInfo()).isEqualTo(ENDPOINTS_CHANGED.version());
    assertThat(ads.behind(store::get)).as("caught up").isFalse();
  }

  @Test
  void aChangeWrittenToTheClientIsTimedFromWhenItReachedTheProxy() {
    ask(TypeUrl.ENDPOINT, ENDPOINTS);

    groupChanged(ENDPOINTS_CHANGED);

    assertThat(transport.fannedOut).containsEntry(TypeUrl.ENDPOINT, ENDPOINTS_CHANGED.changedAt());
  }

  @Test
  void aTypeTheClientDidNotAskForIsNotWritten() {
    ask(TypeUrl.ENDPOINT, ENDPOINTS);

    groupChanged(CLUSTERS);

    assertThat(transport.types()).containsExactly(TypeUrl.ENDPOINT.shortName());
  }
}
