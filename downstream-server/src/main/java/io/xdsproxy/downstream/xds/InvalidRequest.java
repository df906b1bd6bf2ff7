package io.xdsproxy.downstream.xds;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.UnknownFieldSet;
import java.util.Optional;

/**
 * Requests whose bytes are not the message they should be, to be told to the client as its fault.
 * gRPC ends a call whose request its marshaller cannot parse with UNKNOWN ("Application error
 * processing RPC"), whatever the marshaller throws; so the request marshallers return an empty
 * request marked with what is wrong instead, and the stream ends with INVALID_ARGUMENT saying it.
 */
final class InvalidRequest {

  /**
   * The field that carries the mark: the highest field number there is, which no xDS message uses.
   */
  private static final int MARK = (1 << 29) - 1;

  private InvalidRequest() {}

  /** {@code empty} marked as standing for bytes that were not a valid {@code message}. */
  @SuppressWarnings("unchecked")
  static <M extends Message> M of(M empty, InvalidProtocolBufferException e) {
    String why =
        "the request is not a valid "
            + empty.getDescriptorForType().getName()
            + ": "
            + e.getMessage();
    UnknownFieldSet mark =
        UnknownFieldSet.newBuilder()
            .addField(
                MARK,
                UnknownFieldSet.Field.newBuilder()
                    .addLengthDelimited(ByteString.copyFromUtf8(why))
                    .build())
            .build();
    return (M) empty.toBuilder().setUnknownFields(mark).build();
  }

  /** What is wrong with {@code request}, if it stands for bytes that were not a request. */
  static Optional<String> reason(MessageOrBuilder request) {
    UnknownFieldSet.Field mark = request.getUnknownFields().getField(MARK);
    return mark.getLengthDelimitedList().isEmpty()
        ? Optional.empty()
        : Optional.of(mark.getLengthDelimitedList().get(0).toStringUtf8());
  }
}
