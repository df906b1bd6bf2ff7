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
