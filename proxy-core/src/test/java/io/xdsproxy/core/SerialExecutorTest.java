package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.Test;

class SerialExecutorTest {

  /** A pool that runs nothing until told to: the test decides on which thread, and when. */
  private final List<Runnable> pending = new ArrayList<>();

  private final Executor pool = pending::add;
  private final SerialExecutor executor = new SerialExecutor(pool, "the owner");

  private void runPending() {
    while (!pending.isEmpty()) {
      pending.remove(0).run();
    }
  }

  @Test
  void executeHereRunsATaskAtOnceWhenNothingElseRunsOrWaits() {
    List<String> ran = new ArrayList<>();

    executor.executeHere(
        () -> {
          executor.assertCurrent();
          executor.execute(() -> ran.add("submitted meanwhile"));
          ran.add("here");
        });

    assertThat(ran).containsExactly("here");
    assertThat(pending).as("what came meanwhile goes to the pool").hasSize(1);
    runPending();
    assertThat(ran).containsExactly("here", "submitted meanwhile");
    assertThatThrownBy(executor::assertCurrent).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void executeHereQueuesATaskBehindThoseWaiting() {
    List<String> ran = new ArrayList<>();
    executor.execute(() -> ran.add("first"));

    executor.executeHere(() -> ran.add("second"));

    assertThat(ran).as("not ahead of the task that waits").isEmpty();
    runPending();
    assertThat(ran).containsExactly("first", "second");
  }

  @Test
  void executeHereInsideARunningTaskQueuesIt() {
    List<String> ran = new ArrayList<>();
    executor.execute(
        () -> {
          executor.executeHere(() -> ran.add("inner"));
          ran.add("outer");
        });

    runPending();

    assertThat(ran).containsExactly("outer", "inner");
  }

  @Test
  void aTaskThatFailsHereLeavesTheExecutorFreeForTheNext() {
    List<String> ran = new ArrayList<>();

    executor.executeHere(
        () -> {
          throw new IllegalStateException("broken");
        });
    executor.executeHere(() -> ran.add("next"));

    assertThat(ran).containsExactly("next");
    assertThat(pending).isEmpty();
  }

  @Test
  void signalsBeforeTheStandingTaskRunsAreOneRunAfterTheTasksWaiting() {
    List<String> ran = new ArrayList<>();
    SerialExecutor signalled =
        new SerialExecutor(
            pool,
            "the owner",
            () -> {
              ran.add("standing");
            });
    signalled.execute(() -> ran.add("waiting"));

    signalled.signal();
    signalled.signal();
    signalled.executeHere(() -> ran.add("here"));

    assertThat(ran).as("nothing runs ahead of the signal").isEmpty();
    runPending();
    assertThat(ran).containsExactly("waiting", "here", "standing");
  }

  @Test
  void aSignalWhileTheStandingTaskRunsRunsItOnceMore() {
    List<String> ran = new ArrayList<>();
    SerialExecutor[] signalled = new SerialExecutor[1];
    signalled[0] =
        new SerialExecutor(
            pool,
            "the owner",
            () -> {
              signalled[0].assertCurrent();
              ran.add("standing");
              if (ran.size() == 1) {
                signalled[0].signal();
              }
            });

    signalled[0].signal();
    runPending();

    assertThat(ran).containsExactly("standing", "standing");
    assertThat(pending).isEmpty();
    signalled[0].executeHere(() -> ran.add("here"));
    assertThat(ran).as("idle again: runs at once").containsExactly("standing", "standing", "here");
  }

  @Test
  void anExecutorWithoutAStandingTaskRefusesASignal() {
    assertThatThrownBy(executor::signal)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("the owner");
  }

  @Test
  void assertCurrentPassesInsideATaskOfTheExecutor() {
    List<String> ran = new ArrayList<>();
    executor.execute(
        () -> {
          executor.assertCurrent();
          ran.add("task");
        });
    runPending();
    assertThat(ran).containsExactly("task");
  }

  @Test
  void assertCurrentFailsOutsideTheExecutorNamingTheOwner() {
    assertThatThrownBy(executor::assertCurrent)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("the owner");
  }

  @Test
  void assertCurrentFailsAfterTheTasksRanOnTheSameThread() {
    executor.execute(() -> {});
    runPending();
    assertThatThrownBy(executor::assertCurrent).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void assertCurrentFailsInsideATaskOfAnotherExecutor() {
    SerialExecutor other = new SerialExecutor(pool, "another owner");
    List<Throwable> thrown = new ArrayList<>();
    other.execute(
        () -> {
          try {
            executor.assertCurrent();
          } catch (IllegalStateException e) {
            thrown.add(e);
          }
        });
    runPending();
    assertThat(thrown).hasSize(1);
  }

  @Test
  void assertCurrentFailsOnAnotherThreadWhileTheExecutorDrains() throws Exception {
    List<Throwable> thrown = new ArrayList<>();
    executor.execute(
        () -> {
          Thread other =
              new Thread(
                  () -> {
                    try {
                      executor.assertCurrent();
                    } catch (IllegalStateException e) {
                      thrown.add(e);
                    }
                  });
          other.start();
          try {
            other.join(10_000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
    runPending();
    assertThat(thrown).hasSize(1);
  }
}
