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
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class NoHpackTableTest {
  private static final int SETTINGS = 0x4;
  private static final int ACK = 0x1;
  private static final int HEADER_TABLE_SIZE = 0x1;

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
    try (Socket socket = new Socket("127.0.0.1", server.getPort())) {
      socket.setSoTimeout(5000);
      OutputStream out = socket.getOutputStream();
      out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      out.write(new byte[] {0, 0, 0, SETTINGS, 0, 0, 0, 0, 0});
      out.flush();
      DataInputStream in = new DataInputStream(socket.getInputStream());
      int settingsFrames = 0;
      Map<Integer, Long> announced = new HashMap<>();
      while (!announced.containsKey(HEADER_TABLE_SIZE) && settingsFrames < 5) {
        int length = in.readUnsignedShort() << 8 | in.readUnsignedByte();
        int type = in.readUnsignedByte();
        int flags = in.readUnsignedByte();
        in.readInt();
        byte[] payload = new byte[length];
        in.readFully(payload);
        if (type != SETTINGS || (flags & ACK) != 0) {
          continue;
        }
        settingsFrames++;
        DataInputStream entries = new DataInputStream(new java.io.ByteArrayInputStream(payload));
        for (int i = 0; i < length / 6; i++) {
          announced.put(entries.readUnsignedShort(), entries.readInt() & 0xffffffffL);
        }
      }
      assertThat(announced).containsEntry(HEADER_TABLE_SIZE, 0L);
      assertThat(settingsFrames).as("gRPC's own preface comes first").isEqualTo(2);
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
