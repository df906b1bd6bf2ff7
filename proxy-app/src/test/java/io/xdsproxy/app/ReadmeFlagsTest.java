package io.xdsproxy.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.xdsproxy.app.Flags.Flag;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The flags table ({@link Flags#ALL}) against what a user reads: {@code --help}, and the README's
 * "Command line" section, whose synopsis and table must name exactly the table's flags, with the
 * same value syntax and defaults, so that a flag added, renamed or given a new default in the code
 * without the README fails the build.
 */
class ReadmeFlagsTest {

  private static final Path README = Path.of("..", "README.md");

  /** The flags the table defines, by name, in its order. */
  private static Map<String, Flag> flags() {
    Map<String, Flag> flags = new LinkedHashMap<>();
    Flags.ALL.forEach(flag -> flags.put(flag.name(), flag));
    return flags;
  }

  @Test
  void helpListsEveryFlagWithItsValueAndDefault() {
    for (Flag flag : Flags.ALL) {
      String shown = "  --" + flag.name() + (flag.syntax().isEmpty() ? "" : " " + flag.syntax());
      assertThat(ProxyConfig.USAGE.lines())
          .as("--help's line for --%s", flag.name())
          .anyMatch(line -> line.equals(shown) || line.startsWith(shown + "  "));
      if (!flag.shownDefault().isEmpty()) {
        assertThat(ProxyConfig.USAGE)
            .as("--help shows the default of --%s", flag.name())
            .contains("(default " + flag.shownDefault() + ")");
      }
    }
  }

  @Test
  void theDefaultsShownAreTheConfigsDefaults() throws Exception {
    for (Flag flag : Flags.ALL) {
      // log-level's default, info, is the level of every logger without one (logback's root), not a
      // value of the config.
      if (!flag.isKey() || flag.shownDefault().isEmpty() || flag.name().equals("log-level")) {
        continue;
      }
      assertThat(ProxyConfig.parse(new String[] {"--" + flag.name(), flag.shownDefault()}))
          .as("--%s %s, its default as shown", flag.name(), flag.shownDefault())
          .isEqualTo(ProxyConfig.DEFAULTS);
    }
  }

  @Test
  void theReadmeTableListsExactlyTheFlagsWithTheirValuesAndDefaults() throws IOException {
    Map<String, List<String>> rows = new LinkedHashMap<>();
    for (String line : commandLineSection()) {
      Matcher row = TABLE_ROW.matcher(line);
      if (row.matches()) {
        String[] flag = row.group(1).replace("\\|", "|").split(" ", 2);
        rows.put(flag[0], List.of(flag.length > 1 ? flag[1] : "", row.group(2).trim()));
      }
    }
    Map<String, List<String>> expected = new LinkedHashMap<>();
    flags()
        .forEach(
            (name, flag) ->
                expected.put(
                    "--" + name,
                    List.of(
                        flag.syntax(),
                        flag.syntax().isEmpty()
                            ? ""
                            : flag.shownDefault().isEmpty()
                                ? "none"
                                : "`" + flag.shownDefault() + "`")));

    assertThat(rows)
        .as("the README's flags table: flag -> [value, default]")
        .containsExactlyInAnyOrderEntriesOf(expected);
  }

  @Test
  void theReadmeSynopsisNamesEveryFlagWithItsValue() throws IOException {
    Map<String, String> named = new LinkedHashMap<>();
    boolean inSynopsis = false;
    for (String line : commandLineSection()) {
      if (line.startsWith("    java -jar ")) {
        inSynopsis = true;
      } else if (!line.startsWith("    ")) {
        inSynopsis = false;
      }
      if (inSynopsis) {
        String[] words = line.trim().split("\\s+");
        for (int i = 0; i < words.length; i++) {
          Matcher flag = SYNOPSIS_FLAG.matcher(words[i]);
          if (flag.matches()) {
            String value =
                i + 1 < words.length
                        && !words[i + 1].startsWith("[--")
                        && !words[i + 1].startsWith("--")
                        && !words[i + 1].equals("|")
                    ? unbracket(words[i + 1])
                    : "";
            named.put(flag.group(1), value);
          }
        }
      }
    }
    Map<String, String> expected = new LinkedHashMap<>();
    flags().forEach((name, flag) -> expected.put("--" + name, flag.syntax()));

    assertThat(named)
        .as("the README's synopsis: flag -> value")
        .containsExactlyInAnyOrderEntriesOf(expected);
  }

  /**
   * A value as the synopsis writes it, without the brackets and ellipsis that close the optional
   * group it ends.
   */
  private static String unbracket(String word) {
    String value = word.endsWith("...") ? word.substring(0, word.length() - 3) : word;
    while (value.endsWith("]")
        && value.chars().filter(c -> c == ']').count()
            > value.chars().filter(c -> c == '[').count()) {
      value = value.substring(0, value.length() - 1);
    }
    return value;
  }

  private static List<String> commandLineSection() throws IOException {
    List<String> lines = Files.readAllLines(README);
    int start = lines.indexOf("## Command line");
    assertThat(start).as("README has a '## Command line' section").isNotNegative();
    int end = start + 1;
    while (end < lines.size() && !lines.get(end).startsWith("## ")) {
      end++;
    }
    return lines.subList(start + 1, end);
  }

  /**
   * {@code | `--flag VALUE` | default | meaning |}, a {@code |} in the value escaped as {@code \|}.
   */
  private static final Pattern TABLE_ROW =
      Pattern.compile("\\| `(--[a-z-]+(?: (?:[^`\\\\]|\\\\\\|)+)?)` \\|([^|]*)\\|.*");

  private static final Pattern SYNOPSIS_FLAG = Pattern.compile("\\[?(--[a-z-]+)\\]?");
}
