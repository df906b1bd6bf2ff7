package io.xdsproxy.app;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * Which build of the proxy this is: the project's version and the git commit it was built from, as
 * Maven wrote them into {@code build.properties} (proxy-app/pom.xml says where the revision comes
 * from). Told by {@code --version}, the start-up line and {@code xds_proxy_build_info}, so that an
 * operator can say which code a pod runs.
 */
public record BuildInfo(String version, String revision) {

  /** This build. */
  public static final BuildInfo CURRENT = load();

  private static BuildInfo load() {
    Properties properties = new Properties();
    try (InputStream in = BuildInfo.class.getResourceAsStream("build.properties")) {
      if (in != null) {
        properties.load(in);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read build.properties from the proxy's own jar", e);
    }
    return new BuildInfo(value(properties, "version"), value(properties, "revision"));
  }

  /**
   * A value Maven did not fill in (classes compiled by other means than the Maven build) is
   * unknown.
   */
  private static String value(Properties properties, String key) {
    String value = properties.getProperty(key, "").strip();
    return value.isEmpty() || value.contains("${") ? "unknown" : value;
  }

  /** "xds-proxy 0.1.0 (revision 1a2b3c4d5e6f)": what {@code --version} prints. */
  public String describe() {
    return "xds-proxy " + version + " (revision " + revision + ")";
  }
}
