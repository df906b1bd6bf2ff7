package io.xdsproxy.app.testing;

import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/** A real gRPC server that answers {@link #WHO_AM_I} with its name: where xDS routed a call to. */
public final class Backend implements AutoCloseable {

  public static final MethodDescriptor<String, String> WHO_AM_I =
      MethodDescriptor.<String, String>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName("test.Greeter/WhoAmI")
          .setRequestMarshaller(new Utf8())
          .setResponseMarshaller(new Utf8())
          .build();

  private final Server server;

  public Backend(String name) throws IOException {
    ServerServiceDefinition service =
        ServerServiceDefinition.builder("test.Greeter")
            .addMethod(
                WHO_AM_I,
                ServerCalls.asyncUnaryCall(
                    (request, responses) -> {
                      responses.onNext(name);
                      responses.onCompleted();
                    }))
            .build();
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(service)
            .build()
            .start();
  }

  public int port() {
    return server.getPort();
  }

  @Override
  public void close() {
    server.shutdownNow();
  }

  private static final class Utf8 implements MethodDescriptor.Marshaller<String> {
    @Override
    public InputStream stream(String value) {
      return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String parse(InputStream stream) {
      try {
        return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}
