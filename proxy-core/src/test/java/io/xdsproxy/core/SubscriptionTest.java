package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.LazyStringArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The examples of "How the client specifies what resources to return", step by step. */
class SubscriptionTest {

  @Test
  void sotwLegacyWildcardThenStarWithNameThenNameOnlyThenEmptyIsNotAWildcardAgain() {
    Subscription legacy = Subscription.NONE.sotw(List.of());
    assertThat(legacy.wildcard()).isTrue();
    assertThat(legacy.names()).isEmpty();

    Subscription starAndA = legacy.sotw(List.of("*", "A"));
    assertThat(starAndA.wildcard()).isTrue();
    assertThat(starAndA.names()).containsExactly("A");

    Subscription onlyA = starAndA.sotw(List.of("A"));
    assertThat(onlyA.wildcard()).isFalse();
    assertThat(onlyA.names()).containsExactly("A");

    Subscription nothing = onlyA.sotw(List.of());
    assertThat(nothing.isEmpty()).isTrue();
  }

  @Test
  void sotwRepeatedEmptyRequestsKeepTheLegacyWildcard() {
    Subscription once = Subscription.NONE.sotw(List.of());
    assertThat(once.sotw(List.of()).wildcard()).isTrue();
  }

  @Test
  void deltaLegacyWildcardThenNameThenUnsubscribeStarThenUnsubscribeNameLeavesNothing() {
    Subscription legacy = Subscription.NONE.delta(List.of(), List.of(), true);
    assertThat(legacy.wildcard()).isTrue();

    Subscription plusA = legacy.delta(List.of("A"), List.of(), false);
    assertThat(plusA.wildcard()).isTrue();
    assertThat(plusA.names()).containsExactly("A");

    Subscription withoutStar = plusA.delta(List.of(), List.of("*"), false);
    assertThat(withoutStar.wildcard()).isFalse();
    assertThat(withoutStar.names()).containsExactly("A");

    Subscription nothing = withoutStar.delta(List.of(), List.of("A"), false);
    assertThat(nothing.isEmpty()).isTrue();
  }

  @Test
  void deltaFirstRequestNamingAResourceIsNotAWildcard() {
    Subscription named = Subscription.NONE.delta(List.of("A"), List.of(), true);
    assertThat(named.wildcard()).isFalse();
    assertThat(named.interest()).isEqualTo(new Interest(false, Set.of("A")));
  }

  @Test
  void equalRequestListsGiveTheOneSharedSubscriptionAndOneNameMoreItsOwn() {
    List<String> first = requestList("*", "a", "b");
    List<String> second = requestList("*", "a", "b");

    Subscription once = Subscription.NONE.sotw(first);
    assertThat(once.sotw(first)).as("the same list again").isSameAs(once);
    assertThat(Subscription.NONE.sotw(second)).as("an equal list").isSameAs(once);
    assertThat(once.wildcard()).isTrue();
    assertThat(once.names()).containsExactlyInAnyOrder("a", "b");

    Subscription more = Subscription.NONE.sotw(requestList("*", "a", "b", "c"));
    assertThat(more.names()).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(Subscription.sharedList(first)).isSameAs(Subscription.sharedList(second));
    assertThat(Subscription.sharedList(first)).containsExactly("*", "a", "b");
  }

  @Test
  void aListThatCanStillChangeIsNotRememberedByIdentity() {
    LazyStringArrayList names = new LazyStringArrayList();
    names.add("a");
    assertThat(Subscription.NONE.sotw(names).names()).containsExactly("a");
    assertThat(Subscription.sharedList(names)).containsExactly("a");

    names.add("b");
    assertThat(Subscription.NONE.sotw(names).names()).containsExactlyInAnyOrder("a", "b");
    assertThat(Subscription.sharedList(names)).containsExactly("a", "b");
  }

  @Test
  void aDeltaNewcomerSubscribesAsASotwRequestWithTheSameNames() {
    List<String> names = requestList("a", "b");
    Subscription delta = Subscription.NONE.delta(names, List.of(), true);
    assertThat(delta).isSameAs(Subscription.NONE.sotw(names));
    assertThat(delta.wildcard()).isFalse();
    assertThat(delta.explicit()).isTrue();
    assertThat(Subscription.NONE.delta(requestList("*", "a"), List.of(), true).wildcard()).isTrue();
  }

  @Test
  void anInterestIsSharedAndWhatItAsksBeyondAnotherIsExact() {
    Interest ab = Subscription.NONE.sotw(requestList("a", "b")).interest();
    assertThat(Subscription.NONE.sotw(requestList("a", "b")).interest()).isSameAs(ab);
    assertThat(Subscription.NONE.sotw(List.of()).interest())
        .isEqualTo(new Interest(true, Set.of()));

    assertThat(ab.beyond(Interest.NONE)).isEqualTo(ab);
    assertThat(ab.beyond(ab).isEmpty()).isTrue();
    assertThat(ab.beyond(new Interest(false, Set.of("b"))))
        .isEqualTo(new Interest(false, Set.of("a")));
    Interest starA = new Interest(true, Set.of("a"));
    assertThat(starA.beyond(Interest.WILDCARD)).isEqualTo(new Interest(false, Set.of("a")));
    assertThat(starA.beyond(Interest.NONE)).isEqualTo(starA);
  }

  /** A list as a parsed request holds it: one that never changes. */
  private static List<String> requestList(String... names) {
    LazyStringArrayList list = new LazyStringArrayList();
    list.addAll(List.of(names));
    list.makeImmutable();
    return list;
  }
}
