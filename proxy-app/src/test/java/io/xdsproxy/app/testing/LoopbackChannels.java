package io.xdsproxy.app.testing;

import io.grpc.Attributes;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * Plaintext channels to the proxy whose connections come from a loopback address of the test's
 * choice (Linux routes all of 127.0.0.0/8 to the loopback): a client of another address, for the
 * limits that count clients by address.
 */
public final class LoopbackChannels {

  private LoopbackChannels() {}

  /** A channel to {@code port} on 127.0.0.1 whose connections come from {@code address}. */
  public static ManagedChannel from(ProxyFixture fixture, String address, int port) {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress("127.0.0.1", port)
            .usePlaintext()
            .localSocketPicker(
                new NettyChannelBuilder.LocalSocketPicker() {
                  @Override
                  public SocketAddress createSocketAddress(
                      SocketAddress remote, Attributes attributes) {
                    return new InetSocketAddress(address, 0);
                  }
                })
            .build();
    fixture.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
    return channel;
  }
}
