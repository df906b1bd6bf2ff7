package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.type.matcher.v3.NodeMatcher;
import io.envoyproxy.envoy.type.matcher.v3.StringMatcher;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The {@code node_matchers} of a client status request ({@code type.matcher.v3.NodeMatcher}) as a
 * test on a client's node. Matchers are ORed; none matches every node. Only {@code node_id} is
 * matched, with exact, prefix, suffix, contains or safe_regex; anything else is refused rather than
 * ignored, so that a filter the proxy cannot apply never answers with clients it did not ask for.
 */
final class NodeMatchers {

  private NodeMatchers() {}

  /**
   * The test {@code matchers} make.
   *
   * @throws IllegalArgumentException when a matcher is not supported or not valid, saying which
   */
  static Predicate<Node> of(List<NodeMatcher> matchers) {
    if (matchers.isEmpty()) {
      return node -> true;
    }
    List<Predicate<Node>> each = matchers.stream().map(NodeMatchers::one).toList();
    return node -> each.stream().anyMatch(matcher -> matcher.test(node));
  }

  private static Predicate<Node> one(NodeMatcher matcher) {
    if (matcher.getNodeMetadatasCount() > 0) {
      throw new IllegalArgumentException(
          "node_metadatas matchers are not supported by xds-proxy; match on node_id");
    }
    if (!matcher.hasNodeId()) {
      return node -> true;
    }
    Predicate<String> id = strings(matcher.getNodeId());
    return node -> id.test(node.getId());
  }

  /** A {@code StringMatcher}; {@code ignore_case} applies to all but safe_regex, as in Envoy. */
  private static Predicate<String> strings(StringMatcher matcher) {
    boolean ignoreCase = matcher.getIgnoreCase();
    switch (matcher.getMatchPatternCase()) {
      case EXACT -> {
        String exact = fold(matcher.getExact(), ignoreCase);
        return value -> fold(value, ignoreCase).equals(exact);
      }
      case PREFIX -> {
        String prefix = fold(matcher.getPrefix(), ignoreCase);
        return value -> fold(value, ignoreCase).startsWith(prefix);
      }
      case SUFFIX -> {
        String suffix = fold(matcher.getSuffix(), ignoreCase);
        return value -> fold(value, ignoreCase).endsWith(suffix);
      }
      case CONTAINS -> {
        String part = fold(matcher.getContains(), ignoreCase);
        return value -> fold(value, ignoreCase).contains(part);
      }
      case SAFE_REGEX -> {
        String regex = matcher.getSafeRegex().getRegex();
        try {
          // The whole value must match, as with Envoy's RE2 safe_regex.
          Pattern pattern = Pattern.compile(regex);
          return value -> pattern.matcher(value).matches();
        } catch (PatternSyntaxException e) {
          throw new IllegalArgumentException(
              "node_id safe_regex '"
                  + regex
                  + "' is not a valid regular expression: "
                  + e.getDescription());
        }
      }
      default ->
          throw new IllegalArgumentException(
              "node_id matcher "
                  + matcher.getMatchPatternCase()
                  + " is not supported by xds-proxy; use exact, prefix, suffix, contains or safe_regex");
    }
  }

  private static String fold(String value, boolean ignoreCase) {
    return ignoreCase ? value.toLowerCase(Locale.ROOT) : value;
  }
}
