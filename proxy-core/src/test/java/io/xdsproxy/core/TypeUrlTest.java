package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TypeUrlTest {

  @Test
  void aTypesPushOrderIsItsPlaceInMakeBeforeBreakWhateverInstanceNamesIt() {
    assertThat(TypeUrl.CLUSTER.pushOrder()).isZero();
    assertThat(TypeUrl.ENDPOINT.pushOrder()).isEqualTo(1);
    assertThat(new TypeUrl(TypeUrl.LISTENER.url()).pushOrder())
        .as("an equal type that is not the constant")
        .isEqualTo(TypeUrl.LISTENER.pushOrder());
    assertThat(TypeUrl.parse("type.googleapis.com/example.Custom").pushOrder())
        .as("unknown types come last")
        .isEqualTo(TypeUrl.known().size());
    assertThat(TypeUrl.known())
        .allSatisfy(type -> assertThat(TypeUrl.known().get(type.pushOrder())).isSameAs(type));
  }
}
