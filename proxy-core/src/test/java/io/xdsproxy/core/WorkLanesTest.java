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
 * The worker pool's two lanes: change work ahead of initial work, initial work never starved; run
 * by hand (the test takes each task as a worker would) and under a real one-thread pool.
 */
class WorkLanesTest {

  private final WorkLanes lanes = new WorkLanes();
  private final List<String> ran = new ArrayList<>();

  private Runnable task(String name) {
    return () -> ran.add(name);
  }

  private void queueInitial(String prefix, int count) {
    for (int i = 0; i < count; i++) {
      lanes.offer(WorkLanes.initial(task(prefix + i)));
    }
  }

  private void queueChange(String prefix, int count) {
    for (int i = 0; i < count; i++) {
      lanes.offer(task(prefix + i));
    }
  }

  /** Takes and runs {@code count} tasks, as a worker would. */
  private void runNext(int count) {
    for (int i = 0; i < count; i++) {
      lanes.poll().run();
    }
  }

  @Test
  void aChangeTaskWaitsForAtMostOneInitialTaskHoweverDeepTheInitialLane() {
    queueInitial("initial-", 1_000);
    queueChange("warm-", WorkLanes.CHANGE_PER_INITIAL);
    runNext(WorkLanes.CHANGE_PER_INITIAL); // the change lane has just had all its turns in a row

    lanes.offer(task("update"));

    runNext(2);
    assertThat(ran.subList(WorkLanes.CHANGE_PER_INITIAL, ran.size()))
        .as("behind 1,000 initial tasks")
        .containsExactly("initial-0", "update");
    assertThat(lanes.initialQueued()).isEqualTo(999);
  }

  @Test
  void aChangeTaskRunsBeforeInitialOnesQueuedEarlierWhenTheLaneHadNoTurnsYet() {
    queueInitial("initial-", 1_000);
    lanes.offer(task("update"));

    runNext(1);

    assertThat(ran).containsExactly("update");
  }

  @Test
  void whileBothLanesAreDeepInitialWorkGetsOneTurnInFive() {
    queueInitial("i", 100);
    queueChange("c", 100);

    runNext(10);

    assertThat(ran).containsExactly("c0", "c1", "c2", "c3", "i0", "c4", "c5", "c6", "c7", "i1");
    runNext(90);
    assertThat(ran.stream().filter(name -> name.startsWith("i"))).hasSize(20);
  }

  @Test
  void withoutChangeWorkInitialWorkTakesEveryTurnInOrder() {
    queueInitial("i", 10);

    runNext(10);

    assertThat(ran).containsExactly("i0", "i1", "i2", "i3", "i4", "i5", "i6", "i7", "i8", "i9");
    assertThat(lanes.poll()).isNull();
  }

  @Test
  void aPoolOnTheLanesRunsAnUpdateQueuedBehindABurstOfNewcomersNextAndShutsDownWithTheRest()
      throws Exception {
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
