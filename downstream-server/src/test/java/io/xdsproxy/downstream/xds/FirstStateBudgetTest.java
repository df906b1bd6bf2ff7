package io.xdsproxy.downstream.xds;

import static io.xdsproxy.downstream.xds.SotwTypeStateTest.assignment;
import static org.assertj.core.api.Assertions.assertThat;

import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.Snapshots;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The proxy-wide budget of newcomers' first states in flight, alone and under streams' {@link
 * PushScheduler}s whose transports hold what they were written until the test drains them, as Netty
 * does; time is a manual ticker, nothing runs on another thread.
 */
class FirstStateBudgetTest {

  private long now;
  private final FirstStateBudget budget =
      new FirstStateBudget(1_000, TimeUnit.SECONDS.toNanos(1), () -> now, null);
  private final List<String> woken = new ArrayList<>();

  private FirstStateBudget.Account account(String name) {
    return budget.account(() -> false, () -> woken.add(name));
  }

  @Test
  void firstStatesAreAdmittedWhileLessThanTheBudgetIsInFlightAndWaitersAreWokenInOrder() {
    FirstStateBudget.Account a = account("a");
    FirstStateBudget.Account b = account("b");
    FirstStateBudget.Account c = account("c");
    FirstStateBudget.Account d = account("d");

    assertThat(a.tryAcquire()).isTrue();
    a.written(600);
    assertThat(b.tryAcquire()).as("600 of 1,000 in flight").isTrue();
    b.written(600);
    assertThat(c.tryAcquire()).as("1,200 in flight").isFalse();
    assertThat(d.tryAcquire()).isFalse();
    assertThat(budget.waiting()).isEqualTo(2);

    a.release();
    assertThat(woken)
        .as("a's 600 bytes make room for one response of the last size")
        .containsExactly("c");
    assertThat(c.tryAcquire()).as("woken: admitted without asking again").isTrue();
    c.written(100);
    assertThat(woken).as("c wrote less than was set aside for it").containsExactly("c", "d");
    assertThat(d.tryAcquire()).isTrue();
    d.written(0);
    assertThat(budget.inFlight()).as("b's 600 and c's 100").isEqualTo(700);
  }

  @Test
  void aFirstStateLargerThanTheWholeBudgetGoesWhenNothingElseIsInFlight() {
    FirstStateBudget.Account a = account("a");
    FirstStateBudget.Account b = account("b");

    assertThat(a.tryAcquire()).isTrue();
    a.written(5_000);
    assertThat(b.tryAcquire()).isFalse();
    a.release();
    assertThat(woken).containsExactly("b");
    assertThat(b.tryAcquire()).isTrue();
    b.written(5_000);
    assertThat(budget.inFlight()).isEqualTo(5_000);
  }

  @Test
  void aStreamThatEndsGivesItsCreditsBackAndWaitsNoMore() {
    FirstStateBudget.Account a = account("a");
    FirstStateBudget.Account b = account("b");
    FirstStateBudget.Account c = account("c");
    a.tryAcquire();
    a.written(1_000);
    assertThat(b.tryAcquire()).isFalse();
    assertThat(c.tryAcquire()).isFalse();

    b.close();
    assertThat(woken).isEmpty();
    a.close();
    assertThat(woken).as("b ended while it waited").containsExactly("c");
    c.close();
    assertThat(budget.inFlight()).as("c was woken, then ended before writing").isZero();
  }

  @Test
  void creditsHeldPastTheHoldLimitComeBackSoAClientThatStoppedReadingStallsNobody() {
    FirstStateBudget.Account stalled = account("stalled");
    FirstStateBudget.Account b = account("b");
    stalled.tryAcquire();
    stalled.written(1_000);
    assertThat(b.tryAcquire()).isFalse();

    now += TimeUnit.MILLISECONDS.toNanos(999);
    budget.sweep();
    assertThat(woken).isEmpty();
    now += TimeUnit.MILLISECONDS.toNanos(1);
    budget.sweep();
    assertThat(woken).containsExactly("b");
    assertThat(b.tryAcquire()).isTrue();
    b.written(10);
    assertThat(budget.inFlight()).isEqualTo(10);
    stalled.release();
    assertThat(budget.inFlight()).as("what expired is not given back twice").isEqualTo(10);
  }

  /** A stream's transport: what it was written stays buffered, not ready, until drained. */
  private final class Transport implements PushScheduler.Transport {
    final List<EncodedResponse> written = new ArrayList<>();
    long buffered;
    PushScheduler<SotwTypeState> pushes;
    SotwTypeState endpoints;

    @Override
    public boolean isReady() {
      return buffered == 0;
    }

    @Override
    public void write(TypeUrl type, EncodedResponse response) {
      written.add(response);
      buffered += response.size();
    }

    @Override
    public void fannedOut(TypeUrl type, long receivedAt) {}

    /** Netty wrote what was buffered: gRPC calls the stream's onReady handler. */
    void drain() {
      buffered = 0;
      pushes.flushBlocked();
    }

    /**
     * Netty wrote what was buffered; the onReady handler has not run yet (it waits in its lane).
     */
    void written() {
      buffered = 0;
    }
  }

  private static final TypeSnapshot ENDPOINTS =
      Snapshots.complete(TypeUrl.ENDPOINT, List.of(assignment("a", 1)));
  private static final TypeSnapshot ENDPOINTS_CHANGED =
      Snapshots.next(
          ENDPOINTS,
          ResourceUpdate.partial(TypeUrl.ENDPOINT, List.of(assignment("a", 2)), Set.of(), false));

  /** A stream whose client asks for assignment "a"; it is woken on its own transport. */
  private Transport stream(FirstStateBudget budget) {
    Transport transport = new Transport();
    transport.pushes =
        new PushScheduler<>(
            transport,
            true,
            budget.account(transport::isReady, () -> transport.pushes.flushBlocked()));
    transport.endpoints =
        transport.pushes.state(
            TypeUrl.ENDPOINT, t -> new SotwTypeState(t, ENDPOINTS, false, Clock.systemUTC()));
    transport.endpoints.subscribe(List.of("a"));
    transport.endpoints.update(ENDPOINTS);
    transport.pushes.send(TypeUrl.ENDPOINT);
    return transport;
  }

  @Test
  void aNewcomersFirstStateWaitsForAnotherToDrainButAnUpdateToAServedStreamDoesNot() {
    FirstStateBudget one = new FirstStateBudget(1, TimeUnit.SECONDS.toNanos(1), () -> now, null);
    Transport served = stream(one);
    served.drain();
    assertThat(served.written).hasSize(1);

    Transport first = stream(one);
    Transport second = stream(one);
    assertThat(first.written).as("nothing else in flight").hasSize(1);
    assertThat(second.written).as("first's state not yet written by the transport").isEmpty();
    assertThat(second.pushes.awaitsFirstState()).isTrue();

    served.pushes.changed(List.of(TypeUrl.ENDPOINT), type -> ENDPOINTS_CHANGED);
    assertThat(served.written).as("an update never waits for the budget").hasSize(2);
    second.pushes.changed(List.of(TypeUrl.ENDPOINT), type -> ENDPOINTS_CHANGED);
    assertThat(second.written).isEmpty();

    first.drain();
    assertThat(second.written).as("woken when first's transport wrote it").hasSize(1);
    assertThat(second.written.get(0).version())
        .as("built from the newest state")
        .isEqualTo(ENDPOINTS_CHANGED.version());
    assertThat(second.pushes.awaitsFirstState()).isFalse();
  }

  @Test
  void creditsComeBackWhenTheHoldersTransportWroteThemBeforeItsOnReadyHandlerRuns() {
    FirstStateBudget one = new FirstStateBudget(1, TimeUnit.SECONDS.toNanos(1), () -> now, null);
    Transport first = stream(one);
    Transport second = stream(one);
    Transport third = stream(one);
    assertThat(second.written).isEmpty();

    first.written();
    one.sweep();
    assertThat(second.written).as("the budget asked first's transport").hasSize(1);
    assertThat(third.written).isEmpty();

    second.written();
    Transport fourth = stream(one);
    assertThat(third.written)
        .as("a stream asking with the budget spent asks the holders' transports too")
        .hasSize(1);
    assertThat(fourth.written).as("behind third").isEmpty();
  }
}
