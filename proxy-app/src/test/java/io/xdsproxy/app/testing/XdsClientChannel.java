package io.xdsproxy.app.testing;

import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.NameResolverRegistry;
import io.grpc.stub.ClientCalls;
import io.grpc.xds.XdsNameResolverProvider;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A real downstream client: grpc-java's xDS client, bootstrapped to use the proxy as its xDS
 * server, behind a channel for {@code xds:///<service>}. Each instance registers its own URI
 * scheme, so its bootstrap (node and server) is its own even within one JVM.
 */
public final class XdsClientChannel implements AutoCloseable {

  private static final AtomicInteger SCHEMES = new AtomicInteger();

  private final ManagedChannel channel;

  public XdsClientChannel(int proxyPort, String nodeId, String nodeCluster, String service) {
    String scheme = "xds-test-" + SCHEMES.incrementAndGet();
    Map<String, ?> bootstrap =
        Map.of(
            "xds_servers",
                List.of(
                    Map.of(
                        "server_uri", "127.0.0.1:" + proxyPort,
                        "channel_creds", List.of(Map.of("type", "insecure")),
                        "server_features", List.of("xds_v3"))),
            "node", Map.of("id", nodeId, "cluster", nodeCluster));
    NameResolverRegistry.getDefaultRegistry()
        .register(XdsNameResolverProvider.createForTest(scheme, bootstrap));
    channel =
        Grpc.newChannelBuilder(scheme + ":///" + service, InsecureChannelCredentials.create())
            .build();
  }

  /** Calls the service; returns the name of the backend that answered. */
  public String whoAmI() {
    return ClientCalls.blockingUnaryCall(
        channel, Backend.WHO_AM_I, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), "");
  }

  @Override
  public void close() {
    channel.shutdownNow();
  }
}
