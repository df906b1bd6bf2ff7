package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The worker pool's two lanes: change work ahead of initial work, the initial lane at most its
 * share of the workers' time while both have work, never starved, and held while the gate (the
 * event loops' lag, in the proxy) is shut; run by hand on a manual ticker (the test takes each task
 * as a worker would, and each task moves the time on by its cost) and under a real one-thread pool.
 */
class WorkLanesTest {

  /** A newcomer's first state built and written, as the storm's profile measured it. */
  private static final long INITIAL_COST = 5_000_000;

  /** An update written to one stream. */
  private static final long CHANGE_COST = 50_000;

  private long now;
  private boolean gateOpen = true;
  private final WorkLanes lanes = new WorkLanes(() -> now, () -> gateOpen);
  private final List<String> ran = new ArrayList<>();
  private long initialTime;
  private long changeTime;

  private Runnable task(String name) {
    return () -> ran.add(name);
  }

  /**
   * A task that takes {@code cost} nanoseconds of the manual ticker's time; an initial one's name
   * starts with "i", a change one's does not.
   */
  private Runnable costing(String name, long cost) {
    return () -> {
      now += cost;
      if (name.startsWith("i")) {
        initialTime += cost;
      } else {
        changeTime += cost;
      }
      ran.add(name);
    };
  }

  private void queueInitial(String prefix, int count) {
    for (int i = 0; i < count; i++) {
      lanes.offer(WorkLanes.initial(costing(prefix + i, INITIAL_COST)));
    }
  }

  private void queueChange(String prefix, int count) {
    for (int i = 0; i < count; i++) {
      lanes.offer(costing(prefix + i, CHANGE_COST));
    }
  }

  /** Takes and runs {@code count} tasks, as a worker would. */
  private void runNext(int count) {
    for (int i = 0; i < count; i++) {
      lanes.poll().run();
    }
  }

  @Test
  void anUpdatesFanOutQueuedBehindAStormTakesAtMostAQuarterMoreThanAlone() {
    queueInitial("initial-", 500);
    queueChange("change-", 2_000);

    while (lanes.changeQueued() > 0) {
      runNext(1);
    }

    long alone = 2_000 * CHANGE_COST; // 100 ms
    // The initial lane's 20 % share, and one initial task it may run ahead by.
    assertThat(now)
        .as(
            "the fan-out's 2,000 tasks took 100 ms of work; initial tasks run meanwhile: %d",
            ran.stream().filter(name -> name.startsWith("i")).count())
        .isLessThanOrEqualTo(alone * 100 / (100 - WorkLanes.INITIAL_SHARE_PERCENT) + INITIAL_COST);
    assertThat(initialTime).as("newcomers progressed meanwhile").isPositive();
  }

  @Test
  void whileChangeWorkNeverStopsNewcomersStillGetTheirShareOfTheTime() {
    queueInitial("i", 1_000);
    queueChange("c", 10);

    while (now < 2_000_000_000L) {
      int before = ran.size();
      runNext(1);
      if (ran.get(before).startsWith("c")) {
        lanes.offer(costing("c", CHANGE_COST)); // change work never stops
      }
    }

    assertThat((double) initialTime / now).isBetween(0.18, 0.22);
    assertThat(lanes.initialQueued()).as("of 1,000, after 2 s").isLessThan(1_000 - 70);
  }

  @Test
  void aChangeTaskWaitsForAtMostOneInitialTaskHoweverDeepTheInitialLane() {
    queueInitial("initial-", 1_000);
    queueChange("warm-", 100);
    runNext(100); // both lanes have had turns: the balance is wherever the rule left it

    lanes.offer(costing("update", CHANGE_COST));

    List<String> next = new ArrayList<>();
    for (int i = 0; i < 2 && !next.contains("update"); i++) {
      runNext(1);
      next.add(ran.get(ran.size() - 1));
    }
    assertThat(next).as("behind 1,000 initial tasks").contains("update");
  }

  @Test
  void aChangeTaskRunsBeforeInitialOnesQueuedEarlierWhenTheLaneHadNoTurnsYet() {
    queueInitial("initial-", 1_000);
    lanes.offer(task("update"));

    runNext(1);

    assertThat(ran).containsExactly("update");
  }

  @Test
  void anIdleSpellBanksNoCreditForEitherLane() {
    queueChange("alone-", 20_000); // a second of change work, no newcomers
    runNext(20_000);
    queueInitial("i", 500);
    queueChange("c", 2_000);
    long start = now;
    while (lanes.changeQueued() > 0) {
      runNext(1);
    }
    assertThat(now - start)
        .as("the storm after a second of updates alone")
        .isLessThanOrEqualTo(2_000 * CHANGE_COST * 100 / 80 + INITIAL_COST);

    while (lanes.initialQueued() > 0) { // newcomers alone for 2.5 s
      runNext(1);
    }
    queueInitial("i-late-", 500);
    queueChange("d", 2_000);
    long newcomersBefore = initialTime;
    while (lanes.changeQueued() > 0) {
      runNext(1);
    }
    assertThat(initialTime - newcomersBefore)
        .as("newcomers' time during the next fan-out, after 2.5 s of newcomers alone")
        .isGreaterThanOrEqualTo(3 * INITIAL_COST);
  }

  @Test
  void aLongChangeTaskOwesTheInitialLaneAtMostOneTask() {
    queueInitial("i", 1_000);
    queueChange("c", 100);
    runNext(50);
    lanes.offer(costing("slow", 1_000_000_000L)); // a second, say blocked on a lock
    queueChange("d", 5_000);
    while (!ran.contains("slow")) {
      runNext(1);
    }
    long start = now;
    long newcomersBefore = initialTime;

    while (now - start < 100_000_000L) {
      runNext(1);
    }

    assertThat(initialTime - newcomersBefore)
        .as("newcomers' time in the 100 ms after a change task of a second")
        .isLessThanOrEqualTo((now - start) * WorkLanes.INITIAL_SHARE_PERCENT / 100 + INITIAL_COST);
  }

  @Test
  void aSecondWorkerTakingWhileAnInitialTaskRunsTakesChangeWork() {
    queueInitial("i", 100);
    queueChange("c", 5_000);
    runNext(50); // the lanes know what an initial task costs
    int initialTaken = 0;
    for (int round = 0; round < 2_000; round++) { // some 100 ms: five newcomers' turns
      Runnable taken = lanes.poll();
      Runnable second = lanes.poll(); // another worker takes before the first task ends
      taken.run();
      second.run();
      boolean firstInitial = ran.get(ran.size() - 2).startsWith("i");
      boolean secondInitial = ran.get(ran.size() - 1).startsWith("i");
      initialTaken += (firstInitial ? 1 : 0) + (secondInitial ? 1 : 0);
      assertThat(firstInitial && secondInitial)
          .as("two initial tasks at once, round %d", round)
          .isFalse();
    }
    assertThat(initialTaken).isGreaterThanOrEqualTo(3);
  }

  @Test
  void withoutChangeWorkInitialWorkTakesEveryTurnInOrder() {
    queueInitial("i", 10);

    runNext(10);

    assertThat(ran).containsExactly("i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7", "i8", "i9");
    assertThat(lanes.poll()).isNull();
  }

  @Test
  void aShutGateHoldsInitialWorkAndLetsChangeWorkThrough() {
    queueInitial("i", 10);
    queueChange("c", 100);
    gateOpen = false;

    runNext(100);

    assertThat(ran).allMatch(name -> name.startsWith("c"));
    assertThat(lanes.poll()).as("only initial work left, the gate shut").isNull();
    assertThat(lanes.initialQueued()).isEqualTo(10);
    assertThat(lanes.heldByGate()).isPositive();

    gateOpen = true;
    runNext(10);
    assertThat(ran.subList(100, 110)).allMatch(name -> name.startsWith("i"));
  }

  @Test
  void aGateThatStaysShutLetsOneInitialTaskOutPerMostHeld() {
    gateOpen = false;
    queueInitial("i", 10);

    now += WorkLanes.MOST_HELD - 1;
    assertThat(lanes.poll()).as("held a nanosecond less than the most").isNull();
    now += 1;
    runNext(1);
    assertThat(lanes.poll()).as("the next, right after one was let out").isNull();
    now += WorkLanes.MOST_HELD;
    runNext(1);

    assertThat(ran).containsExactly("i0", "i1");
  }

  @Test
  void theMostHeldCountsFromWhenInitialWorkArrivedNotFromTheLastTaskLongBefore() {
    gateOpen = false;
    queueChange("c", 1);
    runNext(1);
    now += 10 * WorkLanes.MOST_HELD; // no newcomers for a while

    queueInitial("i", 1);

    assertThat(lanes.poll()).isNull();
  }

  @Test
  void aPoolWorkerHeldByAShutGateStillRunsTheNewcomersWorkAndChangeWorkAtOnce() throws Exception {
    WorkLanes lanes = new WorkLanes(Ticker.SYSTEM, () -> false);
    ThreadPoolExecutor pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, lanes);
    try {
      CountDownLatch newcomer = new CountDownLatch(1);
      CountDownLatch update = new CountDownLatch(1);
      pool.execute(() -> {}); // the worker exists, and takes from the lanes from now on
      pool.execute(WorkLanes.initial(newcomer::countDown));
      pool.execute(update::countDown);

      assertThat(update.await(10, TimeUnit.SECONDS)).isTrue();
      assertThat(newcomer.await(10, TimeUnit.SECONDS))
          .as("let out after the most a shut gate holds it")
          .isTrue();
      assertThat(lanes.heldByGate()).isPositive();
    } finally {
      pool.shutdown();
      assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();
    }
  }

  @Test
  void aPoolOnTheLanesRunsAnUpdateQueuedBehindABurstOfNewcomersNextAndShutsDownWithTheRest()
      throws Exception {
    WorkLanes lanes = new WorkLanes(Ticker.SYSTEM);
    ThreadPoolExecutor pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, lanes);
    List<String> order = new CopyOnWriteArrayList<>();
    CountDownLatch busy = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    pool.execute(
        () -> {
          busy.countDown();
          await(release);
        });
    busy.await();
    for (int i = 0; i < 50; i++) {
      String name = "newcomer-" + i;
      pool.execute(WorkLanes.initial(() -> order.add(name)));
    }
    pool.execute(() -> order.add("update"));
    assertThat(pool.getQueue()).hasSize(51);

    release.countDown();
    pool.shutdown();
    assertThat(pool.awaitTermination(10, TimeUnit.SECONDS)).isTrue();

    assertThat(order).hasSize(51);
    assertThat(order.indexOf("update"))
        .as("the update's place among 50 newcomers' first states: %s", order)
        .isLessThanOrEqualTo(1);
  }

  @Test
  void shutdownNowHandsBackWhatWaitsInBothLanes() throws Exception {
    WorkLanes lanes = new WorkLanes(Ticker.SYSTEM);
    ThreadPoolExecutor pool = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, lanes);
    CountDownLatch busy = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    pool.execute(
        () -> {
          busy.countDown();
          await(release);
        });
    busy.await();
    pool.execute(WorkLanes.initial(() -> {}));
    pool.execute(() -> {});

    assertThat(pool.shutdownNow()).hasSize(2);
    release.countDown();
    assertThat(lanes).isEmpty();
  }

  private static void await(CountDownLatch latch) {
    try {
      latch.await(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
