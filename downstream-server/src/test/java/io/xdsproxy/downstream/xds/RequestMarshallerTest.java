package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.Status;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.MethodDescriptor;
import io.grpc.protobuf.ProtoUtils;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class RequestMarshallerTest {

  /** How gRPC's client writes a request: a stream that knows its length. */
  private static final MethodDescriptor.Marshaller<DiscoveryRequest> GRPC =
      ProtoUtils.marshaller(DiscoveryRequest.getDefaultInstance());

  private final RequestMarshaller<DiscoveryRequest> marshaller = RequestMarshaller.sotw();
  private final RequestMarshaller<DeltaDiscoveryRequest> delta = RequestMarshaller.delta();
  private final List<String> names =
      IntStream.range(0, 500).mapToObj(i -> "outbound|8080||service-" + i).toList();

  private DiscoveryRequest ack(String nonce) {
    return DiscoveryRequest.newBuilder()
        .setVersionInfo("v7")
        .setNode(Node.newBuilder().setId("envoy-1").setCluster("fleet"))
        .addAllResourceNames(names)
        .setTypeUrl("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment")
        .setResponseNonce(nonce)
        .setErrorDetail(Status.newBuilder().setMessage("no"))
        .build();
  }

  @Test
  void aRequestReadsAsTheProtobufParserReadsIt() throws Exception {
    DiscoveryRequest request = ack("1");

    assertThat(marshaller.parse(request.toByteArray())).isEqualTo(request);
    assertThat(marshaller.read(GRPC.stream(request), null)).isEqualTo(request);
  }

  @Test
  void theSameNamesAgainAreNotDecodedAgain() throws Exception {
    DiscoveryRequest first = marshaller.parse(ack("1").toByteArray());
    DiscoveryRequest second = marshaller.parse(ack("2").toByteArray());

    assertThat(second.getResponseNonce()).isEqualTo("2");
    assertThat(second.getResourceNamesList()).isEqualTo(names);
    assertThat(second.getResourceNamesList())
        .as("one list for both requests, for Subscription to find by identity")
        .isSameAs(first.getResourceNamesList());
    for (int i = 0; i < names.size(); i++) {
      assertThat(second.getResourceNames(i))
          .as("name %d is the string decoded the first time", i)
          .isSameAs(first.getResourceNames(i));
    }
  }

  @Test
  void namesOfTheSameLengthThatDifferOnlyInTheMiddleAreNotConfused() throws Exception {
    List<String> other = new java.util.ArrayList<>(names);
    other.set(250, "outbound|8080||service-X50");
    DiscoveryRequest first = marshaller.parse(ack("1").toByteArray());
    DiscoveryRequest second =
        marshaller.parse(
            ack("2").toBuilder()
                .clearResourceNames()
                .addAllResourceNames(other)
                .build()
                .toByteArray());

    assertThat(first.getResourceNamesList()).isEqualTo(names);
    assertThat(second.getResourceNamesList()).isEqualTo(other);
    assertThat(second.getSerializedSize()).isEqualTo(ack("2").getSerializedSize());
  }

  @Test
  void anAckOfACallIsReadByTheNamesItsLastRequestHeld() throws Exception {
    StreamLane call = new StreamLane(Runnable::run);
    byte[] first = ack("1").toByteArray();
    byte[] second = ack("2").toByteArray();

    DiscoveryRequest read = marshaller.parse(first, first.length, call);
    DiscoveryRequest again = marshaller.parse(second, second.length, call);

    assertThat(call.<DiscoveryRequest>lastNames().request().getResourceNamesCount())
        .isEqualTo(names.size());
    assertThat(again).isEqualTo(ack("2"));
    assertThat(again.getResourceNamesList()).isSameAs(read.getResourceNamesList());
    assertThat(marshaller.parse(ack("3").toByteArray()).getResourceNamesList())
        .as("a request of another call finds the same list by its hash")
        .isSameAs(read.getResourceNamesList());
  }

  /**
   * What the call's next request may hold where its last one's names stood: other names of the same
   * length, those names and more after them, fewer, those names split by another field.
   */
  @Test
  void aCallsNextRequestIsReadForTheNamesItHoldsNotThoseOfTheLast() throws Exception {
    List<String> changed = new java.util.ArrayList<>(names);
    changed.set(250, "outbound|8080||service-X50");
    List<String> more = new java.util.ArrayList<>(names);
    more.add("outbound|8080||service-new");
    ByteArrayOutputStream split = new ByteArrayOutputStream();
    ack("4").writeTo(split);
    CodedOutputStream tail = CodedOutputStream.newInstance(split);
    tail.writeString(DiscoveryRequest.RESOURCE_NAMES_FIELD_NUMBER, "after-the-type-url");
    tail.flush();
    // Each request, and how many names the call is left holding: none after a request read as
    // protobuf reads it (names split, few names), which the stream takes as one of few names.
    Map<byte[], Integer> requests = new LinkedHashMap<>();
    requests.put(withNames(changed), 500);
    requests.put(withNames(more), 501);
    requests.put(withNames(names.subList(0, 400)), 400);
    requests.put(withNames(names.subList(1, names.size())), 499);
    requests.put(split.toByteArray(), null);
    requests.put(withNames(List.of("one")), null);

    for (Map.Entry<byte[], Integer> request : requests.entrySet()) {
      StreamLane call = new StreamLane(Runnable::run);
      byte[] first = ack("1").toByteArray();
      marshaller.parse(first, first.length, call);

      byte[] bytes = request.getKey();
      DiscoveryRequest read = marshaller.parse(bytes, bytes.length, call);

      assertThat(read).isEqualTo(DiscoveryRequest.parseFrom(bytes));
      if (request.getValue() == null) {
        assertThat(call.<DiscoveryRequest>lastNames()).isNull();
      } else {
        assertThat(call.<DiscoveryRequest>lastNames().request().getResourceNamesCount())
            .isEqualTo(request.getValue());
      }
    }
  }

  private byte[] withNames(List<String> some) {
    return ack("2").toBuilder()
        .clearResourceNames()
        .addAllResourceNames(some)
        .build()
        .toByteArray();
  }

  @Test
  void aRequestKeepsNothingOfTheBufferItWasReadInto() throws Exception {
    DiscoveryRequest first =
        ack("1").toBuilder()
            .setErrorDetail(
                Status.newBuilder()
                    .setMessage("bad")
                    .addDetails(
                        com.google.protobuf.Any.newBuilder()
                            .setTypeUrl("type.googleapis.com/x")
                            .setValue(ByteString.copyFromUtf8("first's bytes"))))
            .setUnknownFields(
                com.google.protobuf.UnknownFieldSet.newBuilder()
                    .addField(
                        1000,
                        com.google.protobuf.UnknownFieldSet.Field.newBuilder()
                            .addLengthDelimited(ByteString.copyFromUtf8("unknown of the first"))
                            .build())
                    .build())
            .build();
    DiscoveryRequest second =
        ack("2").toBuilder().clearResourceNames().addResourceNames("x".repeat(20_000)).build();

    DiscoveryRequest readFirst = marshaller.read(GRPC.stream(first), null);
    DiscoveryRequest readSecond = marshaller.read(GRPC.stream(second), null);

    assertThat(readFirst).isEqualTo(first);
    assertThat(readSecond).isEqualTo(second);
  }

  @Test
  void namesSplitByAnotherFieldAndFewNamesAreReadAsUsual() throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    for (int i = 0; i < 20; i++) {
      out.writeString(DiscoveryRequest.RESOURCE_NAMES_FIELD_NUMBER, "a" + i);
    }
    out.writeString(
        DiscoveryRequest.TYPE_URL_FIELD_NUMBER,
        "type.googleapis.com/envoy.config.cluster.v3.Cluster");
    for (int i = 0; i < 20; i++) {
      out.writeString(DiscoveryRequest.RESOURCE_NAMES_FIELD_NUMBER, "b" + i);
    }
    out.flush();

    DiscoveryRequest split = marshaller.parse(bytes.toByteArray());

    assertThat(split).isEqualTo(DiscoveryRequest.parseFrom(bytes.toByteArray()));
    assertThat(split.getResourceNamesCount()).isEqualTo(40);
    DiscoveryRequest few =
        DiscoveryRequest.newBuilder().addResourceNames("x").setResponseNonce("n").build();
    assertThat(marshaller.parse(few.toByteArray())).isEqualTo(few);
  }

  @Test
  void garbageIsRefusedAsTheProtobufParserRefusesIt() {
    byte[] garbage = ByteString.copyFromUtf8("\u0012\u00ffnot a request at all").toByteArray();

    assertThatThrownBy(() -> marshaller.parse(garbage))
        .isInstanceOf(InvalidProtocolBufferException.class);
  }

  /**
   * A Delta newcomer's first request as one encoder may write it: fields of every kind, unknown
   * ones included, before and after the run of names subscribed, and fields of the same number
   * split around it.
   */
  private byte[] deltaNewcomer(String node) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    CodedOutputStream out = CodedOutputStream.newInstance(bytes);
    out.writeMessage(
        DeltaDiscoveryRequest.NODE_FIELD_NUMBER,
        Node.newBuilder().setId(node).setCluster("fleet").build());
    out.writeString(
        DeltaDiscoveryRequest.TYPE_URL_FIELD_NUMBER,
        "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment");
    out.writeString(DeltaDiscoveryRequest.RESOURCE_NAMES_UNSUBSCRIBE_FIELD_NUMBER, "gone-1");
    out.writeUInt64(1000, 7); // a field of a later version of the API
    for (String name : names) {
      out.writeString(DeltaDiscoveryRequest.RESOURCE_NAMES_SUBSCRIBE_FIELD_NUMBER, name);
    }
    out.writeString(DeltaDiscoveryRequest.RESOURCE_NAMES_UNSUBSCRIBE_FIELD_NUMBER, "gone-2");
    // The entry of the map as its encoder writes it: a request's encoding merges into the rest.
    out.writeRawBytes(
        DeltaDiscoveryRequest.newBuilder()
            .putInitialResourceVersions(names.get(3), "v3")
            .build()
            .toByteString());
    out.writeString(DeltaDiscoveryRequest.RESPONSE_NONCE_FIELD_NUMBER, "n-" + node);
    out.writeMessage(
        DeltaDiscoveryRequest.ERROR_DETAIL_FIELD_NUMBER,
        Status.newBuilder().setCode(3).setMessage("no").build());
    out.writeString(1001, "unknown too");
    out.flush();
    return bytes.toByteArray();
  }

  @Test
  void aDeltaRequestReadsAsTheProtobufParserReadsIt() throws Exception {
    byte[] first = deltaNewcomer("envoy-1");
    byte[] again = deltaNewcomer("envoy-2");

    DeltaDiscoveryRequest expected = DeltaDiscoveryRequest.parseFrom(first);
    assertThat(expected.getResourceNamesSubscribeList()).isEqualTo(names);
    assertThat(expected.getResourceNamesUnsubscribeList()).containsExactly("gone-1", "gone-2");
    assertThat(expected.getInitialResourceVersionsMap()).containsEntry(names.get(3), "v3");
    assertThat(expected.getUnknownFields().asMap()).containsOnlyKeys(1000, 1001);
    assertThat(delta.parse(first)).isEqualTo(expected);
    assertThat(delta.read(new ByteArrayInputStream(again), null))
        .as("read with the names already decoded")
        .isEqualTo(DeltaDiscoveryRequest.parseFrom(again));
    assertThat(
            delta.read(
                ProtoUtils.marshaller(DeltaDiscoveryRequest.getDefaultInstance()).stream(expected),
                null))
        .isEqualTo(expected);
  }

  @Test
  void deltaNewcomersSubscribingTheSameNamesShareOneList() throws Exception {
    DeltaDiscoveryRequest first = delta.parse(deltaNewcomer("envoy-1"));
    DeltaDiscoveryRequest second = delta.parse(deltaNewcomer("envoy-2"));

    assertThat(second.getNode().getId()).isEqualTo("envoy-2");
    assertThat(second.getResponseNonce()).isEqualTo("n-envoy-2");
    assertThat(second.getResourceNamesSubscribeList())
        .as("one list for both newcomers, for Subscription to find by identity")
        .isSameAs(first.getResourceNamesSubscribeList());
    assertThat(second.getResourceNamesUnsubscribeList())
        .as("the other lists are the request's own")
        .isNotSameAs(first.getResourceNamesUnsubscribeList());
  }

  @Test
  void deltaNamesSplitByAnotherFieldAndFewNamesAreReadAsUsual() throws Exception {
    DeltaDiscoveryRequest.Builder split = DeltaDiscoveryRequest.newBuilder();
    names.subList(0, 20).forEach(split::addResourceNamesSubscribe);
    byte[] head = split.build().toByteArray();
    byte[] tail =
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl("type.googleapis.com/envoy.config.cluster.v3.Cluster")
            .addAllResourceNamesSubscribe(names.subList(20, 40))
            .build()
            .toByteArray();
    byte[] bytes = Arrays.copyOf(head, head.length + tail.length);
    System.arraycopy(tail, 0, bytes, head.length, tail.length);

    DeltaDiscoveryRequest read = delta.parse(bytes);

    assertThat(read).isEqualTo(DeltaDiscoveryRequest.parseFrom(bytes));
    assertThat(read.getResourceNamesSubscribeCount()).isEqualTo(40);
    DeltaDiscoveryRequest few =
        DeltaDiscoveryRequest.newBuilder()
            .addResourceNamesSubscribe("x")
            .setResponseNonce("n")
            .build();
    assertThat(delta.parse(few.toByteArray())).isEqualTo(few);
  }

  @Test
  void deltaGarbageIsMarkedAsNoRequestSayingWhatIsWrong() throws Exception {
    byte[] newcomer = deltaNewcomer("envoy-1");
    byte[] cut = Arrays.copyOf(newcomer, newcomer.length - 3); // ends inside its last field
    byte[] badNonce = withInvalidUtf8(newcomer, "n-envoy-1"); // a field read after the names
    byte[] badName = withInvalidUtf8(newcomer, names.get(7)); // a name of the run

    for (byte[] garbage : List.of(cut, badNonce, badName)) {
      String plain = refusal(garbage);
      assertThat(InvalidRequest.reason(delta.read(new ByteArrayInputStream(garbage), null)))
          .hasValueSatisfying(
              reason ->
                  assertThat(reason)
                      .startsWith("the request is not a valid DeltaDiscoveryRequest: ")
                      .endsWith(plain));
    }
    assertThat(delta.parse(newcomer))
        .as("names that did not decode were not kept")
        .isEqualTo(DeltaDiscoveryRequest.parseFrom(newcomer));
  }

  /** What protobuf's parser says is wrong with {@code bytes}; fails if it reads them. */
  private static String refusal(byte[] bytes) {
    try {
      DeltaDiscoveryRequest.parseFrom(bytes);
    } catch (InvalidProtocolBufferException e) {
      return e.getMessage();
    }
    throw new AssertionError("protobuf reads " + HexFormat.of().formatHex(bytes));
  }

  /** {@code bytes} with the last byte of the string {@code text} in them made invalid UTF-8. */
  private static byte[] withInvalidUtf8(byte[] bytes, String text) {
    byte[] needle = text.getBytes(StandardCharsets.UTF_8);
    byte[] changed = bytes.clone();
    for (int i = 0; i + needle.length <= bytes.length; i++) {
      if (Arrays.equals(bytes, i, i + needle.length, needle, 0, needle.length)) {
        changed[i + needle.length - 1] = (byte) 0xff;
        return changed;
      }
    }
    throw new AssertionError("no " + text + " in the request");
  }
}
