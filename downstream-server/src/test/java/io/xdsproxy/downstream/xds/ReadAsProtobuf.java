package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Parser;
import java.io.ByteArrayInputStream;
import java.util.Optional;

/** The fuzz tests' check that a {@link RequestMarshaller} reads bytes as protobuf reads them. */
final class ReadAsProtobuf {
  private ReadAsProtobuf() {}

  /**
   * What protobuf reads of {@code bytes}, empty if it cannot, having checked that {@code
   * marshaller} reads the same, or marks them as no request ({@link InvalidRequest}).
   */
  static <M extends Message> Optional<M> check(
      RequestMarshaller<M> marshaller, Parser<M> protobuf, byte[] bytes) {
    Optional<M> parsed;
    try {
      parsed = Optional.of(protobuf.parseFrom(bytes));
    } catch (InvalidProtocolBufferException e) {
      parsed = Optional.empty();
    }
    M read = marshaller.read(new ByteArrayInputStream(bytes), null);
    if (parsed.isPresent()) {
      assertThat(read)
          .as("the marshaller reads a request as protobuf does")
          .isEqualTo(parsed.get());
    } else {
      assertThat(InvalidRequest.reason(read))
          .as("bytes protobuf cannot read are marked as no request")
          .isPresent();
    }
    return parsed;
  }
}
