package io.xdsproxy.app;

import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.downstream.xds.RestDiscovery;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import java.util.stream.Collectors;

/**
 * What part of the stores {@code /config_dump} shows, from its query: {@code group} (a group key,
 * exactly), {@code type} (a type URL, or a known type's name) and {@code name_regex} (resource
 * names in which the regex finds a match: {@code ^...$} for whole names). Each one given narrows
 * the dump; none given: everything.
 */
record ConfigDumpFilter(
    Optional<String> group, Optional<TypeUrl> type, Optional<Pattern> nameRegex) {

  static final ConfigDumpFilter ALL =
      new ConfigDumpFilter(Optional.empty(), Optional.empty(), Optional.empty());

  private static final Set<String> PARAMETERS = Set.of("group", "type", "name_regex");

  /**
   * The filter of the raw query {@code query} (null: none).
   *
   * @throws IllegalArgumentException with a message for the operator: an unknown or repeated
   *     parameter, a type that is not one, a regex that does not compile
   */
  static ConfigDumpFilter parse(String query) {
    Map<String, String> parameters = new HashMap<>();
    if (query != null && !query.isEmpty()) {
      for (String pair : query.split("&")) {
        int equals = pair.indexOf('=');
        String name = decode(equals < 0 ? pair : pair.substring(0, equals));
        String value = equals < 0 ? "" : decode(pair.substring(equals + 1));
        if (!PARAMETERS.contains(name)) {
          throw new IllegalArgumentException(
              "unknown query parameter '"
                  + name
                  + "': /config_dump takes "
                  + PARAMETERS.stream().sorted().collect(Collectors.joining(", ")));
        }
        if (parameters.put(name, value) != null) {
          throw new IllegalArgumentException("query parameter '" + name + "' given twice");
        }
      }
    }
    Optional<Pattern> nameRegex;
    try {
      nameRegex = Optional.ofNullable(parameters.get("name_regex")).map(Pattern::compile);
    } catch (PatternSyntaxException e) {
      throw new IllegalArgumentException("name_regex is not a Java regex: " + e.getMessage());
    }
    return new ConfigDumpFilter(
        Optional.ofNullable(parameters.get("group")),
        Optional.ofNullable(parameters.get("type")).map(ConfigDumpFilter::type),
        nameRegex);
  }

  /**
   * A type URL, or the name of a known type as an operator would write it: its message name ({@code
   * envoy.config.cluster.v3.Cluster}), that name's last part ({@code Cluster}) or its REST-JSON
   * path's ({@code clusters}), in any case.
   */
  private static TypeUrl type(String name) {
    if (name.contains("/")) {
      return TypeUrl.parse(name);
    }
    for (TypeUrl known : TypeUrl.known()) {
      String message = known.shortName();
      if (name.equalsIgnoreCase(message)
          || name.equalsIgnoreCase(message.substring(message.lastIndexOf('.') + 1))) {
        return known;
      }
    }
    TypeUrl rest = RestDiscovery.PATHS.get("/v3/discovery:" + name.toLowerCase(Locale.ROOT));
    if (rest != null) {
      return rest;
    }
    throw new IllegalArgumentException(
        "type '"
            + name
            + "' is neither a type URL nor the name of a known type, such as "
            + "clusters, Cluster or envoy.config.cluster.v3.Cluster");
  }

  private static String decode(String text) {
    return URLDecoder.decode(text, StandardCharsets.UTF_8);
  }

  boolean includes(NodeGroup candidate) {
    return group.isEmpty() || group.get().equals(candidate.key().value());
  }

  boolean includes(TypeUrl candidate) {
    return type.isEmpty() || type.get().equals(candidate);
  }

  boolean includesName(String name) {
    return nameRegex.isEmpty() || nameRegex.get().matcher(name).find();
  }

  /** Whether the dump leaves out what a filter leaves empty (a type without a matching name). */
  boolean narrowsNames() {
    return nameRegex.isPresent();
  }
}
