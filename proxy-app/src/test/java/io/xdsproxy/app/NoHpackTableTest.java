package io.xdsproxy.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.xdsproxy.app.testing.ProxyFixture;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class NoHpackTableTest {
  private static final int SETTINGS = 0x4;
  private static final int ACK = 0x1;
  private static final int HEADER_TABLE_SIZE = 0x1;

  @RegisterExtension final ProxyFixture fixture = new ProxyFixture();

  private Server server;

  @BeforeEach
  void start() throws Exception {
    server =
        NettyServerBuilder.forAddress(
                new InetSocketAddress("127.0.0.1", 0),
                NoHpackTable.wrap(InsecureServerCredentials.create()))
            .addService(new HealthStatusManager().getHealthService())
            .build()
            .start();
  }

  @AfterEach
  void stop() throws Exception {
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  @Test
  void serverAnnouncesAnEmptyHeaderTableAfterItsPreface() throws Exception {
    Announced announced = Announced.by(server.getPort());
    assertThat(announced.settings()).containsEntry(HEADER_TABLE_SIZE, 0L);
    assertThat(announced.frames()).as("gRPC's own preface comes first").isEqualTo(2);
  }

  @Test
  void theProxyAsksForNoTableUnlessTold() throws Exception {
    ProxyConfig config = ProxyFixture.serving(Path.of("../deploy/examples/resources"));
    assertThat(Announced.by(fixture.proxy(config).xdsPort()).settings())
        .containsEntry(HEADER_TABLE_SIZE, 0L);
    assertThat(Announced.by(fixture.proxy(config.withXdsHpackTable(true)).xdsPort()).settings())
        .as("gRPC's defaults: no table size announced")
        .doesNotContainKey(HEADER_TABLE_SIZE);
  }

  /** What a server announced in its SETTINGS frames, read off a raw socket. */
  private record Announced(Map<Integer, Long> settings, int frames) {
    /**
     * Connects to {@code port}, sends the client preface, and reads SETTINGS frames until one names
     * the header table size, or two came, or the server says nothing more for a second.
     */
    static Announced by(int port) throws Exception {
      try (Socket socket = new Socket("127.0.0.1", port)) {
        socket.setSoTimeout(5000);
        OutputStream out = socket.getOutputStream();
        out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.write(new byte[] {0, 0, 0, SETTINGS, 0, 0, 0, 0, 0});
        out.flush();
        DataInputStream in = new DataInputStream(socket.getInputStream());
        int frames = 0;
        Map<Integer, Long> announced = new HashMap<>();
        while (!announced.containsKey(HEADER_TABLE_SIZE) && frames < 2) {
          int length;
          try {
            length = in.readUnsignedShort() << 8 | in.readUnsignedByte();
          } catch (SocketTimeoutException silent) {
            break;
          }
          socket.setSoTimeout(1000); // the preface has begun: what follows comes at once
          int type = in.readUnsignedByte();
          int flags = in.readUnsignedByte();
          in.readInt();
          byte[] payload = new byte[length];
          in.readFully(payload);
          if (type != SETTINGS || (flags & ACK) != 0) {
            continue;
          }
          frames++;
          DataInputStream entries = new DataInputStream(new java.io.ByteArrayInputStream(payload));
          for (int i = 0; i < length / 6; i++) {
            announced.put(entries.readUnsignedShort(), entries.readInt() & 0xffffffffL);
          }
        }
        return new Announced(announced, frames);
      }
    }
  }

  @Test
  void callsAfterTheClientAcknowledgedTheEmptyTableStillWork() {
    ManagedChannel channel =
        NettyChannelBuilder.forAddress(
                "127.0.0.1", server.getPort(), InsecureChannelCredentials.create())
            .build();
    try {
      HealthGrpc.HealthBlockingStub health =
          HealthGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);
      // The first call's headers may be indexed before the client saw the SETTINGS; the later
      // ones must begin with the table size update or the server ends the connection.
      for (int i = 0; i < 3; i++) {
        assertThat(
                health
                    .withDeadlineAfter(5, TimeUnit.SECONDS)
                    .check(HealthCheckRequest.getDefaultInstance())
                    .getStatus())
            .isEqualTo(ServingStatus.SERVING);
      }
    } finally {
      channel.shutdownNow();
    }
  }
}
