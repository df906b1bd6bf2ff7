package io.xdsproxy.downstream;

import io.xdsproxy.downstream.ProxyConfig.ConfigException;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/** {@code java -jar xds-proxy.jar [flags]}: see {@link ProxyConfig#USAGE}. */
public final class Main {

  private Main() {}

  public static void main(String[] args) {
    SLF4JBridgeHandler.removeHandlersForRootLogger();
    SLF4JBridgeHandler.install();
    if (args.length == 1 && (args[0].equals("--help") || args[0].equals("-h"))) {
      System.out.println(ProxyConfig.USAGE);
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
    XdsProxy proxy;
    try {
      proxy = XdsProxy.start(config);
    } catch (IOException e) {
      System.err.println("xds-proxy: cannot start: " + e.getMessage());
      System.exit(1);
      return;
    }
    Logger log = LoggerFactory.getLogger(Main.class);
    log.info("xds-proxy listening for xDS on port {}, admin HTTP on port {}; upstream: {}",
        proxy.xdsPort(), proxy.adminPort(), proxy.describeUpstream());
    Runtime.getRuntime().addShutdownHook(new Thread(proxy::close, "xds-proxy-shutdown"));
  }
}
