package io.xdsproxy.app.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.Yaml;

/**
 * Walking parsed YAML (Kubernetes objects, Helm values, Prometheus rules) by path: a missing field
 * or a field of the wrong shape fails the test naming its path.
 */
public final class Yamls {

  private Yamls() {}

  /** The non-empty documents of a multi-document YAML text, each a mapping. */
  public static List<Map<String, Object>> documents(String text, String source) {
    List<Map<String, Object>> documents = new ArrayList<>();
    for (Object document : new Yaml().loadAll(text)) {
      if (document != null) {
        assertThat(document).as("a document of %s", source).isInstanceOf(Map.class);
        documents.add(cast(document));
      }
    }
    return documents;
  }

  public static Object get(Object node, String... path) {
    Object at = node;
    for (int i = 0; i < path.length; i++) {
      assertThat(at)
          .as("%s is a mapping", String.join(".", Arrays.asList(path).subList(0, i)))
          .isInstanceOf(Map.class);
      Map<String, Object> mapping = cast(at);
      assertThat(mapping)
          .as("%s", String.join(".", Arrays.asList(path).subList(0, i + 1)))
          .containsKey(path[i]);
      at = mapping.get(path[i]);
    }
    return at;
  }

  /** Whether {@code path} leads somewhere in {@code node}, through mappings only. */
  public static boolean has(Object node, String... path) {
    Object at = node;
    for (String key : path) {
      if (!(at instanceof Map<?, ?> mapping) || !mapping.containsKey(key)) {
        return false;
      }
      at = mapping.get(key);
    }
    return true;
  }

  public static Map<String, Object> map(Object node, String... path) {
    Object found = get(node, path);
    assertThat(found).as("%s is a mapping", String.join(".", path)).isInstanceOf(Map.class);
    return cast(found);
  }

  @SuppressWarnings("unchecked")
  public static List<Object> list(Object node, String... path) {
    Object found = get(node, path);
    assertThat(found).as("%s is a list", String.join(".", path)).isInstanceOf(List.class);
    return (List<Object>) found;
  }

  public static List<String> strings(Object node, String... path) {
    return list(node, path).stream().map(String::valueOf).toList();
  }

  public static String str(Object node, String... path) {
    Object found = get(node, path);
    assertThat(found).as("%s is a string", String.join(".", path)).isInstanceOf(String.class);
    return (String) found;
  }

  @SuppressWarnings("unchecked")
  public static Map<String, Object> cast(Object node) {
    return (Map<String, Object>) node;
  }
}
