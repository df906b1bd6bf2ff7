package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** How a client's strings are cut, escaped and made labels. */
class ClientStringsTest {

  @Test
  void aShortStringIsKeptWholeAndALongOneIsCutSayingHowMuchWasLeftOut() {
    assertThat(ClientStrings.bounded("node-1", 6)).isEqualTo("node-1");
    assertThat(ClientStrings.bounded("x".repeat(1_048_576), 4)).isEqualTo("xxxx…(+1048572 chars)");
    assertThat(ClientStrings.bounded(null, 4)).isNull();
    assertThat(ClientStrings.bounded("ab\uD83D\uDE00cd", 3))
        .as("a surrogate pair is not split")
        .isEqualTo("ab…(+4 chars)");
  }

  @Test
  void everyCharacterThatCouldEndOrDisguiseALineIsEscapedAndNothingElse() {
    String forged = "n1\n2026-01-01T00:00:00.000Z ERROR forged\r\u0085\u2028\u2029\u202E\u0000";

    String escaped = ClientStrings.escaped(forged);

    assertThat(escaped)
        .isEqualTo(
            "n1\\n2026-01-01T00:00:00.000Z ERROR forged\\r\\u0085\\u2028\\u2029\\u202e\\u0000");
    assertThat(escaped.codePoints().noneMatch(ClientStrings::needsEscape)).isTrue();
    assertThat(ClientStrings.escaped("é ü \\ \" = ~ 日本 \uD83D\uDE00"))
        .as("text, quotes and backslashes are kept")
        .isEqualTo("é ü \\ \" = ~ 日本 \uD83D\uDE00");
    assertThat(ClientStrings.escaped("tag \uDB40\uDC01"))
        .as("a supplementary format character, each unit")
        .isEqualTo("tag \\udb40\\udc01");
  }

  @Test
  void shownIsCutThenEscaped() {
    assertThat(ClientStrings.shown("a\nb" + "x".repeat(ClientStrings.SHOWN)))
        .startsWith("a\\nb")
        .endsWith("…(+3 chars)");
  }

  @Test
  void aLongLabelIsItsBeginningAndAStableHashAndTwoThatBeginAlikeStayTwo() {
    String base = "fleet-".repeat(20);

    String one = ClientStrings.label(base + "one");
    String two = ClientStrings.label(base + "two");

    assertThat(ClientStrings.label("fleet")).isEqualTo("fleet");
    assertThat(ClientStrings.label("x".repeat(ClientStrings.LABEL)))
        .isEqualTo("x".repeat(ClientStrings.LABEL));
    assertThat(one).hasSizeLessThanOrEqualTo(ClientStrings.LABEL).startsWith(base.substring(0, 48));
    assertThat(one).matches(".{48}~[0-9a-f]{12}");
    assertThat(one).isNotEqualTo(two).isEqualTo(ClientStrings.label(base + "one"));
  }

  @Test
  void aGroupKeyShowsCutAndIsLabelledBounded() {
    NodeGroupKey key = new NodeGroupKey("c".repeat(1_048_576));

    assertThat(key.toString()).hasSize(ClientStrings.SHOWN + "…(+1048320 chars)".length());
    assertThat(key.label()).hasSizeLessThanOrEqualTo(ClientStrings.LABEL);
    assertThat(LogFields.NONE.node("n".repeat(1000)).group(key).pairs())
        .allSatisfy(
            pair ->
                assertThat(String.valueOf(pair.value)).hasSizeLessThan(ClientStrings.SHOWN + 20));
  }
}
