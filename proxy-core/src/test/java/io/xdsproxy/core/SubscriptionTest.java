package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

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
}
