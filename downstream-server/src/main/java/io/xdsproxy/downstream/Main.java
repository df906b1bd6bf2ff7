package io.xdsproxy.downstream;

import io.xdsproxy.downstream.ProxyConfig.ConfigException;
import java.io.IOException;
import java.net.BindException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

/** {@code java -jar xds-proxy.jar [flags]}: see {@link ProxyConfig#USAGE}. */
public final class Main {

  private Main() {}

  public static void main(String[] args) {
    SLF4JBridgeHandler.removeHandlersForRootLogger();
    SLF4JBridgeHandler.install();
    ProxyConfig config;
    try {
      config = ProxyConfig.parse(args);
    } catch (ConfigException e) {
      System.err.println("xds-proxy: " + e.getMessage() + "\n" + ProxyConfig.USAGE);
      System.exit(2);
      return;
    }
    XdsProxy proxy;
    try {
      proxy = XdsProxy.start(config);
    } catch (IOException e) {
      String why = e instanceof BindException || e.getCause() instanceof BindException
          ? "a port is already in use (xDS " + config.xdsPort() + ", admin " + config.adminPort() + ")"
          : e.getMessage();
      System.err.println("xds-proxy: cannot start: " + why);
      System.exit(1);
      return;
    }
    Logger log = LoggerFactory.getLogger(Main.class);
    log.info("xds-proxy listening for xDS on port {}, admin HTTP on port {}; upstream: {}",
        proxy.xdsPort(), proxy.adminPort(), proxy.describeUpstream());
    Runtime.getRuntime().addShutdownHook(new Thread(proxy::close, "xds-proxy-shutdown"));
  }
}
