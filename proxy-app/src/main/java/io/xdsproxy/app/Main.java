package io.xdsproxy.app;

import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.app.logging.JsonLineEncoder;
import io.xdsproxy.app.logging.Logs;
import io.xdsproxy.app.logging.TextLineEncoder;
import java.io.IOException;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;
import sun.misc.Signal;

/** {@code java -jar xds-proxy.jar [flags]}: see {@link ProxyConfig#USAGE}. */
public final class Main {

  private Main() {}

  /**
   * Where a started proxy listens, as its start-up line says it ("listening for xDS on port …,
   * monitoring HTTP on port …, admin HTTP on ADDRESS:PORT"): how a script, or a test, that started
   * it with port 0 finds the ports the proxy bound.
   */
  public record Listening(int xdsPort, int monitoringPort, int adminPort) {
    private static final Pattern LINE =
        Pattern.compile(
            "listening for xDS on port (\\d+) .*monitoring HTTP on port (\\d+), admin HTTP on"
                + " [^ ]+:(\\d+)");

    /** The ports named in {@code text} (a log line, or a whole log) if it holds that line. */
    public static Optional<Listening> in(String text) {
      Matcher ports = LINE.matcher(text);
      return ports.find()
          ? Optional.of(
              new Listening(
                  Integer.parseInt(ports.group(1)),
                  Integer.parseInt(ports.group(2)),
                  Integer.parseInt(ports.group(3))))
          : Optional.empty();
    }
  }

  /**
   * A thread for the drain. Not a daemon, as it would be if it inherited the signal dispatcher's
   * kind: the JVM would exit as soon as the xDS server's threads stop, halfway through closing.
   */
  private static Thread drainThread(Runnable drain) {
    Thread thread = new Thread(drain, "xds-proxy-drain");
    thread.setDaemon(false);
    return thread;
  }

  /**
   * How the start-up line names the xDS port's TLS implementation: " by openssl", or " by jdk" and,
   * when {@code auto} fell back to it, that it did (the warning before says why).
   */
  private static String describe(TlsProvider.Chosen provider) {
    return " by "
        + provider.name()
        + (provider.fallbackReason().isPresent() ? ", as openssl cannot load here" : "");
  }

  public static void main(String[] args) {
    SLF4JBridgeHandler.removeHandlersForRootLogger();
    SLF4JBridgeHandler.install();
    if (args.length == 1 && (args[0].equals("--help") || args[0].equals("-h"))) {
      System.out.println(ProxyConfig.USAGE);
      return;
    }
    if (args.length == 1 && args[0].equals("--version")) {
      System.out.println(BuildInfo.CURRENT.describe());
      return;
    }
    ProxyConfig config;
    try {
      config = ProxyConfig.parse(args);
    } catch (ConfigException e) {
      System.err.println("xds-proxy: " + e.getMessage() + " (--help shows the flags)");
      System.exit(2);
      return;
    }
    // Before the proxy starts: its first lines are already in the format and at the levels asked
    // for.
    Logs.configure(
        config.logFormat() == ProxyConfig.LogFormat.JSON
            ? new JsonLineEncoder()
            : new TextLineEncoder(),
        config.logLevels());
    XdsProxy proxy;
    try {
      proxy = XdsProxy.start(config);
    } catch (IOException e) {
      System.err.println("xds-proxy: cannot start: " + e.getMessage());
      System.exit(1);
      return;
    }
    Logger log = LoggerFactory.getLogger(Main.class);
    String xdsSecurity =
        !config.tls().enabled()
            ? "plaintext"
            : (config.tls().clientCa().isEmpty() ? "TLS" : "mutual TLS")
                + proxy.tlsProvider().map(Main::describe).orElse("")
                + config
                    .tls()
                    .nodeIdPattern()
                    .map(pattern -> ", node ids checked by " + pattern)
                    .orElse("");
    log.info(
        "xds-proxy {} (revision {}) listening for xDS on port {} ({}), monitoring HTTP on port {}, admin HTTP on"
            + " {}:{}{}; upstream: {}",
        BuildInfo.CURRENT.version(),
        BuildInfo.CURRENT.revision(),
        proxy.xdsPort(),
        xdsSecurity,
        proxy.monitoringPort(),
        config.adminAddress(),
        proxy.adminPort(),
        proxy.restPort().map(port -> ", REST-JSON xDS on port " + port).orElse(""),
        proxy.describeUpstream());
    // SIGTERM (Kubernetes' way to stop a pod) and SIGINT drain, then exit 0; any other way out
    // closes.
    for (String name : new String[] {"TERM", "INT"}) {
      Signal.handle(
          new Signal(name),
          signal ->
              drainThread(
                      () -> {
                        log.info(
                            "SIG{}: not ready any more, draining streams for up to {}",
                            name,
                            config.drainTime());
                        try {
                          proxy.drain(config.drainTime());
                          log.info("drained; exiting");
                        } catch (RuntimeException | Error e) {
                          log.error("draining failed; exiting", e);
                        }
                        System.exit(0);
                      })
                  .start());
    }
    Runtime.getRuntime().addShutdownHook(new Thread(proxy::close, "xds-proxy-shutdown"));
  }
}
