package io.xdsproxy.downstream.xds;

import static io.xdsproxy.downstream.xds.FuzzedXds.LIMITS;
import static io.xdsproxy.downstream.xds.FuzzedXds.NAMES;
import static io.xdsproxy.downstream.xds.FuzzedXds.NODES;
import static io.xdsproxy.downstream.xds.FuzzedXds.OBSERVER;
import static io.xdsproxy.downstream.xds.FuzzedXds.STORED;
import static io.xdsproxy.downstream.xds.FuzzedXds.STORED_NAMES;
import static io.xdsproxy.downstream.xds.FuzzedXds.TYPE_URLS;
import static io.xdsproxy.downstream.xds.FuzzedXds.seed;
import static io.xdsproxy.downstream.xds.FuzzedXds.typeOf;
import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.Status;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.Status.Code;
import io.xdsproxy.core.ResourceDecoder;
import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * State-of-the-World ADS streams under fuzzing: clients send whatever requests the fuzzer makes up
 * (any type URL, names, nonce, version, NACK, node), or bytes that may not be a request at all,
 * while the upstream adds, changes and removes resources. Checked after every step, against a model
 * of the client written from the spec, not from the proxy:
 *
 * <ul>
 *   <li>a stream is closed exactly when the model says a request breaks the rules (no node first,
 *       another node later, a bad type URL, too many or too long names, an ungroupable node, a full
 *       group), with INVALID_ARGUMENT, RESOURCE_EXHAUSTED or FAILED_PRECONDITION; never INTERNAL,
 *       which is the proxy failing (DESIGN invariant 7);
 *   <li>every response decodes, has a fresh nonce, is of a type the stream asked for, and holds
 *       only resources of that type that the stream subscribes to;
 *   <li>the proxy's own request marshaller reads any bytes as protobuf's parser does;
 *   <li>after one well-formed ACK per type, and ACKs of whatever comes back, every open stream
 *       holds what the upstream holds of its subscription: all of it for Listener and Cluster
 *       (whatever is gone is gone), each subscribed resource's latest copy for the other types;
 *   <li>a well-behaved stream of the same group, watching all along, is never closed and converges
 *       too.
 * </ul>
 */
class SotwRequestFuzzTest {

  private static final RequestMarshaller<DiscoveryRequest> MARSHALLER = RequestMarshaller.sotw();

  @FuzzTest(maxDuration = "8s")
  void anyRequestsLeaveEveryStreamConvergedOrClosedForTheClientsFault(FuzzedDataProvider data) {
    MemoryUpstream upstream = new MemoryUpstream();
    List<String> exchange = new ArrayList<>();
    try (InProcessProxy proxy = new InProcessProxy(upstream, LIMITS)) {
      seed(upstream);
      Run run = new Run(upstream, exchange);
      Client observer = run.open("observer", proxy, OBSERVER);
      run.send(observer, request(TypeUrl.CLUSTER.url(), List.of(), "", "", false, OBSERVER));
      run.send(
          observer,
          request(TypeUrl.ENDPOINT.url(), List.of("e0", "e1", "e2"), "", "", false, null));
      List<Client> clients = new ArrayList<>();
      int count = data.consumeInt(1, 3);
      for (int i = 0; i < count; i++) {
        clients.add(run.open("client " + i, proxy, data.pickValue(NODES)));
      }
      for (int step = 0; step < 48 && data.remainingBytes() > 0; step++) {
        Client client = data.pickValue(clients);
        switch (data.consumeInt(0, 7)) {
          case 0, 1, 2 -> {
            if (client.open()) {
              run.send(client, fuzzedRequest(data, client));
            }
          }
          case 3 -> {
            if (client.open()) {
              run.sendBytes(client, fuzzedBytes(data, client));
            }
          }
          case 4 -> {
            TypeUrl type = data.pickValue(STORED);
            String name = data.pickValue(STORED_NAMES.get(type));
            if (data.consumeBoolean()) {
              upstream.put(type, name, data.consumeInt(0, 3));
              exchange.add("upstream: " + type.shortName() + " " + name + " changed");
            } else {
              upstream.remove(type, name);
              exchange.add("upstream: " + type.shortName() + " " + name + " removed");
            }
          }
          case 5 -> {
            if (client.open()) {
              boolean ready = data.consumeBoolean();
              exchange.add(client.label + ": transport " + (ready ? "ready" : "not ready"));
              client.call.ready(ready);
            }
          }
          case 6 -> {
            if (client.open() && data.consumeInt(0, 3) == 0) {
              exchange.add(client.label + ": half-closes");
              client.call.halfClose();
              client.expectClose(Code.OK);
            }
          }
          default -> run.ackAll(client);
        }
        run.drainAll();
        run.ackAll(observer);
        assertThat(observer.call.closedWith()).as("the well-behaved stream of the group").isNull();
      }
      for (Client client : run.clients) {
        if (client.open()) {
          run.converge(client);
        }
      }
    } catch (AssertionError e) {
      throw new AssertionError(
          e.getMessage() + "\nThe exchange, oldest first:\n  " + String.join("\n  ", exchange), e);
    }
  }

  private static DiscoveryRequest fuzzedRequest(FuzzedDataProvider data, Client client) {
    String typeUrl = data.pickValue(TYPE_URLS);
    List<String> names = new ArrayList<>();
    int count = data.consumeInt(0, 8);
    for (int i = 0; i < count; i++) {
      names.add(data.pickValue(NAMES));
    }
    TypeView view = client.types.get(typeOf(typeUrl));
    String nonce =
        switch (data.consumeInt(0, 3)) {
          case 0 -> "";
          case 1 -> view == null ? "" : view.lastNonce;
          case 2 -> client.nonces.isEmpty() ? "1" : data.pickValue(client.nonces);
          default -> data.consumeAsciiString(4);
        };
    String version =
        data.consumeBoolean() && view != null ? view.lastVersion : data.consumeAsciiString(4);
    boolean nack = data.consumeInt(0, 3) == 0;
    Node node =
        switch (data.consumeInt(0, 3)) {
          case 0 -> null;
          case 1, 2 -> client.home;
          default -> data.pickValue(NODES);
        };
    return request(typeUrl, names, nonce, version, nack, node);
  }

  /**
   * Bytes that may not be a request: the fuzzer's own, or a request of many names (enough for the
   * marshaller's shortcut) with the fuzzer's bytes spliced in.
   */
  private static byte[] fuzzedBytes(FuzzedDataProvider data, Client client) {
    if (data.consumeBoolean()) {
      return data.consumeBytes(data.consumeInt(0, 256));
    }
    List<String> names = new ArrayList<>();
    int count = data.consumeInt(16, 24);
    for (int i = 0; i < count; i++) {
      names.add(data.pickValue(NAMES));
    }
    byte[] encoded =
        request(data.pickValue(TYPE_URLS), names, "", "", false, client.home).toByteArray();
    int at = data.consumeInt(0, encoded.length);
    byte[] splice = data.consumeBytes(data.consumeInt(0, 8));
    byte[] spliced = new byte[encoded.length + splice.length];
    System.arraycopy(encoded, 0, spliced, 0, at);
    System.arraycopy(splice, 0, spliced, at, splice.length);
    System.arraycopy(encoded, at, spliced, at + splice.length, encoded.length - at);
    return spliced;
  }

  static DiscoveryRequest request(
      String typeUrl, List<String> names, String nonce, String version, boolean nack, Node node) {
    DiscoveryRequest.Builder request =
        DiscoveryRequest.newBuilder()
            .setTypeUrl(typeUrl)
            .addAllResourceNames(names)
            .setResponseNonce(nonce)
            .setVersionInfo(version);
    if (nack) {
      request.setErrorDetail(Status.newBuilder().setCode(3).setMessage("rejected by the fuzzer"));
    }
    if (node != null) {
      request.setNode(node);
    }
    return request.build();
  }

  /**
   * What one client was sent of one type, and what it holds: the model the proxy is checked
   * against.
   */
  static final class TypeView {
    /** The resource_names of the last request the proxy took, or null before the first. */
    List<String> names;

    /**
     * Whether a request ever named resources: an empty list then means none, not the legacy
     * wildcard.
     */
    boolean explicit;

    String lastNonce = "";
    String lastVersion = "";
    final Map<String, Any> held = new HashMap<>();

    boolean covers(String name) {
      if (names == null) {
        return false;
      }
      if (names.isEmpty()) {
        return !explicit;
      }
      return names.contains(Subscription.WILDCARD) || names.contains(name);
    }
  }

  /** One client stream and the model of what it should see. */
  static final class Client {
    final String label;
    final Node home;
    final InProcessCall<InputStream> call;

    /** The node the stream was placed with, once the proxy took its first request. */
    Node node;

    final Map<TypeUrl, TypeView> types = new HashMap<>();
    final List<String> nonces = new ArrayList<>();

    /** How the model expects the stream to have been closed; null while it should be open. */
    Code expectedClose;

    Client(String label, Node home, InProcessCall<InputStream> call) {
      this.label = label;
      this.home = home;
      this.call = call;
    }

    boolean open() {
      return expectedClose == null;
    }

    void expectClose(Code code) {
      expectedClose = code;
    }
  }

  /** The clients of one fuzz input, the exchange so far, and the checks. */
  static final class Run {
    final MemoryUpstream upstream;
    final List<String> exchange;
    final List<Client> clients = new ArrayList<>();

    Run(MemoryUpstream upstream, List<String> exchange) {
      this.upstream = upstream;
      this.exchange = exchange;
    }

    Client open(String label, InProcessProxy proxy, Node home) {
      Client client = new Client(label, home, proxy.sotw());
      clients.add(client);
      return client;
    }

    void send(Client client, DiscoveryRequest request) {
      exchange.add(client.label + " sends " + request.toString().replace('\n', ' '));
      expect(client, request);
      client.call.receive(request.toByteArray());
      drainAll();
    }

    /**
     * Bytes that may be no request: the marshaller must read them as protobuf does, and mark those
     * protobuf cannot read ({@link InvalidRequest}), which end the stream with INVALID_ARGUMENT.
     */
    void sendBytes(Client client, byte[] bytes) {
      exchange.add(client.label + " sends bytes " + java.util.HexFormat.of().formatHex(bytes));
      Optional<DiscoveryRequest> parsed =
          ReadAsProtobuf.check(MARSHALLER, DiscoveryRequest.parser(), bytes);
      if (parsed.isPresent() && InvalidRequest.reason(parsed.get()).isEmpty()) {
        expect(client, parsed.get());
      } else if (client.open()) {
        client.expectClose(
            Code.INVALID_ARGUMENT); // not a request (or one that carries the mark itself)
      }
      client.call.receive(bytes);
      drainAll();
    }

    /**
     * ACKs the last response of each type the client was sent one of, as a client that accepts
     * everything.
     */
    void ackAll(Client client) {
      for (Map.Entry<TypeUrl, TypeView> entry : new TreeMap<>(client.types).entrySet()) {
        TypeView view = entry.getValue();
        if (client.open() && !view.lastNonce.isEmpty() && view.names != null) {
          send(
              client,
              request(
                  entry.getKey().url(), view.names, view.lastNonce, view.lastVersion, false, null));
        }
      }
    }

    /**
     * The model's part of a request: whether it closes the stream, with which status, and what it
     * changes of the subscription. The checks come in the order the spec and the limits give them.
     */
    private void expect(Client client, DiscoveryRequest request) {
      if (client.node == null) {
        if (!request.hasNode()) {
          client.expectClose(Code.INVALID_ARGUMENT);
          return;
        }
        if (request.getNode().getCluster().isEmpty()) {
          client.expectClose(Code.FAILED_PRECONDITION);
          return;
        }
        if (openInGroup(request.getNode().getCluster()) >= LIMITS.maxStreamsPerGroup()) {
          client.expectClose(Code.RESOURCE_EXHAUSTED);
          return;
        }
        client.node = request.getNode();
      } else if (request.hasNode() && !request.getNode().equals(client.node)) {
        client.expectClose(Code.INVALID_ARGUMENT);
        return;
      }
      TypeUrl type = typeOf(request.getTypeUrl());
      if (type == null) {
        client.expectClose(Code.INVALID_ARGUMENT);
        return;
      }
      TypeView view = client.types.computeIfAbsent(type, t -> new TypeView());
      String nonce = request.getResponseNonce();
      if (!nonce.isEmpty() && !view.lastNonce.isEmpty() && !nonce.equals(view.lastNonce)) {
        return; // stale: ignored, names and all
      }
      List<String> names = request.getResourceNamesList();
      if (!names.equals(view.names)) {
        if (names.size() > LIMITS.maxNamesPerRequest()) {
          client.expectClose(Code.RESOURCE_EXHAUSTED);
          return;
        }
        if (names.stream().anyMatch(name -> name.length() > LIMITS.maxNameLength())) {
          client.expectClose(Code.INVALID_ARGUMENT);
          return;
        }
      }
      view.names = List.copyOf(names);
      view.explicit |= !names.isEmpty();
      // A client forgets what it no longer subscribes to.
      view.held.keySet().removeIf(name -> !view.covers(name));
    }

    private int openInGroup(String cluster) {
      int open = 0;
      for (Client client : clients) {
        if (client.open() && client.node != null && client.node.getCluster().equals(cluster)) {
          open++;
        }
      }
      return open;
    }

    /**
     * Reads every response written so far, checks it, and applies it to its client; checks how each
     * stream stands.
     */
    void drainAll() {
      for (Client client : clients) {
        for (byte[] bytes : client.call.takeWritten()) {
          receive(client, bytes);
        }
        io.grpc.Status closed = client.call.closedWith();
        if (client.expectedClose == null) {
          assertThat(closed)
              .as(client.label + " is closed after a request the rules allow")
              .isNull();
        } else {
          assertThat(closed).as(client.label + " is closed").isNotNull();
          assertThat(closed.getCode())
              .as(client.label + " is closed with " + closed)
              .isEqualTo(client.expectedClose);
          assertThat(closed.getCode() != Code.INTERNAL || client.call.closedAsUnreadable())
              .as("INTERNAL only from gRPC, for bytes that are not a request: " + closed)
              .isTrue();
        }
      }
    }

    private void receive(Client client, byte[] bytes) {
      DiscoveryResponse response;
      try {
        response = DiscoveryResponse.parseFrom(bytes);
      } catch (InvalidProtocolBufferException e) {
        throw new AssertionError(
            client.label + " was written a response that is not a DiscoveryResponse", e);
      }
      exchange.add(client.label + " receives " + summary(response));
      TypeUrl type = typeOf(response.getTypeUrl());
      TypeView view = client.types.get(type);
      assertThat(view != null && view.names != null)
          .as("a response of a type the stream asked for")
          .isTrue();
      assertThat(response.getNonce()).as("a response has a nonce").isNotEmpty();
      assertThat(client.nonces)
          .as("a response's nonce is new on the stream")
          .doesNotContain(response.getNonce());
      Map<String, Any> resources = new HashMap<>();
      for (Any resource : response.getResourcesList()) {
        assertThat(resource.getTypeUrl())
            .as("a resource of the response's type")
            .isEqualTo(type.url());
        String name = ResourceDecoder.nameOf(resource.getValue());
        assertThat(view.covers(name)).as("a resource the stream subscribes to: " + name).isTrue();
        assertThat(resources.put(name, resource))
            .as("a resource once in a response: " + name)
            .isNull();
      }
      if (type.isFullStateInSotw()) {
        view.held.clear();
      }
      view.held.putAll(resources);
      view.lastNonce = response.getNonce();
      view.lastVersion = response.getVersionInfo();
      client.nonces.add(response.getNonce());
    }

    /**
     * ACKs until the proxy has nothing more to say, then checks the client holds the upstream's
     * state.
     */
    void converge(Client client) {
      exchange.add(client.label + ": transport ready; ACKs until quiet");
      client.call.ready(true);
      drainAll();
      for (Map.Entry<TypeUrl, TypeView> entry : new TreeMap<>(client.types).entrySet()) {
        if (client.open() && entry.getValue().names != null) {
          TypeView view = entry.getValue();
          send(
              client,
              request(
                  entry.getKey().url(), view.names, view.lastNonce, view.lastVersion, false, null));
        }
      }
      for (int round = 0; round < 8 && client.open(); round++) {
        Set<String> before = new HashSet<>(client.nonces);
        ackAll(client);
        if (before.containsAll(client.nonces) && before.size() == client.nonces.size()) {
          break;
        }
      }
      assertThat(client.call.closedWith())
          .as(client.label + " is open after well-formed ACKs")
          .isNull();
      for (TypeUrl type : STORED) {
        TypeView view = client.types.get(type);
        if (view == null || view.names == null) {
          continue;
        }
        Map<String, Any> expected = new TreeMap<>();
        for (Map.Entry<String, XdsResource> stored : upstream.state(type).entrySet()) {
          if (view.covers(stored.getKey())) {
            expected.put(stored.getKey(), stored.getValue().body());
          }
        }
        if (type.isFullStateInSotw()) {
          assertThat(new TreeMap<>(view.held))
              .as(client.label + " holds every " + type.shortName() + " it subscribes to")
              .isEqualTo(expected);
        } else {
          for (Map.Entry<String, Any> resource : expected.entrySet()) {
            assertThat(view.held.get(resource.getKey()))
                .as(
                    client.label
                        + " holds the latest "
                        + type.shortName()
                        + " "
                        + resource.getKey())
                .isEqualTo(resource.getValue());
          }
        }
      }
    }

    private static String summary(DiscoveryResponse response) {
      List<String> names = new ArrayList<>();
      response.getResourcesList().forEach(any -> names.add(ResourceDecoder.nameOf(any.getValue())));
      return "type "
          + response.getTypeUrl()
          + " version "
          + response.getVersionInfo()
          + " nonce "
          + response.getNonce()
          + " "
          + names;
    }
  }
}
