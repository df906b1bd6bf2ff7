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
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.grpc.Status.Code;
import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Incremental (Delta) ADS streams under fuzzing: clients subscribe and unsubscribe whatever the
 * fuzzer makes up (the wildcard too), claim versions on their first request of a type, send any
 * nonce, NACK, leave out or change the node, or send bytes that may not be a request at all, while
 * the upstream adds, changes and removes resources. Checked after every step, against a model of
 * the client written from the spec:
 *
 * <ul>
 *   <li>a stream is closed exactly when the model says a request breaks the rules, with
 *       INVALID_ARGUMENT, RESOURCE_EXHAUSTED or FAILED_PRECONDITION, never INTERNAL (DESIGN
 *       invariant 7);
 *   <li>every response decodes, has a fresh nonce, is of a type the stream asked for, and brings
 *       only resources of that type, named and versioned, that the stream subscribes to;
 *   <li>after ACKs of the latest responses until the proxy is quiet, what each open client holds,
 *       having applied every response (resources by name and version, and removals), is what the
 *       upstream holds of its subscription;
 *   <li>a well-behaved stream of the same group, watching all along, is never closed and converges
 *       too.
 * </ul>
 */
class DeltaRequestFuzzTest {

  private static final RequestMarshaller<DeltaDiscoveryRequest> MARSHALLER =
      RequestMarshaller.delta();

  /**
   * The encoding of a newcomer's subscription to more names than a request of few is parsed with:
   * bytes after it are read around names the marshaller decoded before, or not.
   */
  private static final byte[] MANY_NAMES =
      DeltaDiscoveryRequest.newBuilder()
          .addAllResourceNamesSubscribe(NAMES)
          .addAllResourceNamesSubscribe(NAMES)
          .addAllResourceNamesSubscribe(NAMES)
          .build()
          .toByteArray();

  @FuzzTest(maxDuration = "8s")
  void anyRequestsLeaveEveryStreamConvergedOrClosedForTheClientsFault(FuzzedDataProvider data) {
    MemoryUpstream upstream = new MemoryUpstream();
    List<String> exchange = new ArrayList<>();
    try (InProcessProxy proxy = new InProcessProxy(upstream, LIMITS)) {
      seed(upstream);
      Run run = new Run(upstream, exchange);
      Client observer = run.open("observer", proxy, OBSERVER);
      run.send(
          observer,
          request(TypeUrl.CLUSTER.url(), List.of(), List.of(), Map.of(), "", false, OBSERVER));
      run.send(
          observer,
          request(
              TypeUrl.ENDPOINT.url(),
              List.of("e0", "e1", "e2"),
              List.of(),
              Map.of(),
              "",
              false,
              null));
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
              run.send(client, fuzzedRequest(data, client, upstream));
            }
          }
          case 3 -> {
            if (client.open()) {
              boolean afterNames = data.consumeBoolean();
              byte[] bytes = data.consumeBytes(data.consumeInt(0, 256));
              run.sendBytes(client, afterNames ? afterManyNames(bytes) : bytes);
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
              client.expectedClose = Code.OK;
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

  private static DeltaDiscoveryRequest fuzzedRequest(
      FuzzedDataProvider data, Client client, MemoryUpstream upstream) {
    String typeUrl = data.pickValue(TYPE_URLS);
    TypeUrl type = typeOf(typeUrl);
    List<String> subscribe = pickNames(data, data.consumeInt(0, 5));
    List<String> unsubscribe = pickNames(data, data.consumeInt(0, 3));
    // Versions a client claims from an earlier stream: the upstream's, another, or made up.
    Map<String, String> initial = new LinkedHashMap<>();
    int claims = data.consumeInt(0, 3);
    for (int i = 0; i < claims; i++) {
      String name = data.pickValue(NAMES);
      XdsResource stored =
          type == null || !STORED.contains(type) ? null : upstream.state(type).get(name);
      initial.put(
          name,
          stored != null && data.consumeBoolean() ? stored.version() : data.consumeAsciiString(6));
    }
    TypeView view = client.types.get(type);
    String nonce =
        switch (data.consumeInt(0, 3)) {
          case 0 -> "";
          case 1 -> view == null ? "" : view.lastNonce;
          case 2 -> client.nonces.isEmpty() ? "1" : data.pickValue(client.nonces);
          default -> data.consumeAsciiString(4);
        };
    boolean nack = data.consumeInt(0, 3) == 0;
    Node node =
        switch (data.consumeInt(0, 3)) {
          case 0 -> null;
          case 1, 2 -> client.home;
          default -> data.pickValue(NODES);
        };
    return request(typeUrl, subscribe, unsubscribe, initial, nonce, nack, node);
  }

  private static byte[] afterManyNames(byte[] bytes) {
    byte[] joined = Arrays.copyOf(MANY_NAMES, MANY_NAMES.length + bytes.length);
    System.arraycopy(bytes, 0, joined, MANY_NAMES.length, bytes.length);
    return joined;
  }

  private static List<String> pickNames(FuzzedDataProvider data, int count) {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      names.add(data.pickValue(NAMES));
    }
    return names;
  }

  static DeltaDiscoveryRequest request(
      String typeUrl,
      List<String> subscribe,
      List<String> unsubscribe,
      Map<String, String> initial,
      String nonce,
      boolean nack,
      Node node) {
    DeltaDiscoveryRequest.Builder request =
        DeltaDiscoveryRequest.newBuilder()
            .setTypeUrl(typeUrl)
            .addAllResourceNamesSubscribe(subscribe)
            .addAllResourceNamesUnsubscribe(unsubscribe)
            .putAllInitialResourceVersions(initial)
            .setResponseNonce(nonce);
    if (nack) {
      request.setErrorDetail(Status.newBuilder().setCode(3).setMessage("rejected by the fuzzer"));
    }
    if (node != null) {
      request.setNode(node);
    }
    return request.build();
  }

  /**
   * A resource as the client holds it: its version, and its body unless it only claimed the
   * version.
   */
  record Held(String version, Any body) {}

  /**
   * One type of one client: its subscription, what it holds, the model the proxy is checked
   * against.
   */
  static final class TypeView {
    /** Whether the proxy took a request of this type: the first one alone may claim versions. */
    boolean requested;

    boolean wildcard;

    /** Whether a request ever subscribed to a name: the legacy wildcard is then gone for good. */
    boolean explicit;

    final Set<String> names = new HashSet<>();
    String lastNonce = "";
    final Map<String, Held> held = new HashMap<>();

    /**
     * The client claimed versions of names it does not subscribe to, which the spec leaves open:
     * not checked.
     */
    boolean unmodelled;

    boolean covers(String name) {
      return wildcard || names.contains(name);
    }
  }

  /** One client stream and the model of what it should see. */
  static final class Client {
    final String label;
    final Node home;
    final InProcessCall<InputStream> call;
    Node node;
    final Map<TypeUrl, TypeView> types = new HashMap<>();
    final List<String> nonces = new ArrayList<>();
    Code expectedClose;

    Client(String label, Node home, InProcessCall<InputStream> call) {
      this.label = label;
      this.home = home;
      this.call = call;
    }

    boolean open() {
      return expectedClose == null;
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
      Client client = new Client(label, home, proxy.delta());
      clients.add(client);
      return client;
    }

    void send(Client client, DeltaDiscoveryRequest request) {
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
      Optional<DeltaDiscoveryRequest> parsed =
          ReadAsProtobuf.check(MARSHALLER, DeltaDiscoveryRequest.parser(), bytes);
      if (parsed.isPresent() && InvalidRequest.reason(parsed.get()).isEmpty()) {
        expect(client, parsed.get());
      } else if (client.open()) {
        client.expectedClose =
            Code.INVALID_ARGUMENT; // not a request (or one that carries the mark itself)
      }
      client.call.receive(bytes);
      drainAll();
    }

    /** ACKs the latest response of each type, as a client that accepts everything. */
    void ackAll(Client client) {
      for (Map.Entry<TypeUrl, TypeView> entry : new TreeMap<>(client.types).entrySet()) {
        if (client.open() && !entry.getValue().lastNonce.isEmpty()) {
          send(
              client,
              request(
                  entry.getKey().url(),
                  List.of(),
                  List.of(),
                  Map.of(),
                  entry.getValue().lastNonce,
                  false,
                  null));
        }
      }
    }

    /**
     * The model's part of a request: whether it closes the stream, and what it changes of the
     * subscription.
     */
    private void expect(Client client, DeltaDiscoveryRequest request) {
      if (client.node == null) {
        if (!request.hasNode()) {
          client.expectedClose = Code.INVALID_ARGUMENT;
          return;
        }
        if (request.getNode().getCluster().isEmpty()) {
          client.expectedClose = Code.FAILED_PRECONDITION;
          return;
        }
        if (openInGroup(request.getNode().getCluster()) >= LIMITS.maxStreamsPerGroup()) {
          client.expectedClose = Code.RESOURCE_EXHAUSTED;
          return;
        }
        client.node = request.getNode();
      } else if (request.hasNode() && !request.getNode().equals(client.node)) {
        client.expectedClose = Code.INVALID_ARGUMENT;
        return;
      }
      TypeUrl type = typeOf(request.getTypeUrl());
      if (type == null) {
        client.expectedClose = Code.INVALID_ARGUMENT;
        return;
      }
      TypeView view = client.types.computeIfAbsent(type, t -> new TypeView());
      List<String> subscribe = request.getResourceNamesSubscribeList();
      List<String> unsubscribe = request.getResourceNamesUnsubscribeList();
      Map<String, String> initial = request.getInitialResourceVersionsMap();
      int count = subscribe.size() + unsubscribe.size() + initial.size();
      if (count > LIMITS.maxNamesPerRequest()) {
        client.expectedClose = Code.RESOURCE_EXHAUSTED;
        return;
      }
      List<String> every = new ArrayList<>(subscribe);
      every.addAll(unsubscribe);
      every.addAll(initial.keySet());
      if (every.stream().anyMatch(name -> name.length() > LIMITS.maxNameLength())) {
        client.expectedClose = Code.INVALID_ARGUMENT;
        return;
      }
      boolean first = !view.requested;
      view.requested = true;
      if (!first && subscribe.isEmpty() && unsubscribe.isEmpty()) {
        return; // an ACK or a NACK: the subscription stays
      }
      Set<String> namedBefore = Set.copyOf(view.names);
      boolean wildcardBefore = view.wildcard;
      // "How the client specifies what resources to return": the first request of a type that names
      // nothing is the legacy wildcard; "*" subscribes to the wildcard and unsubscribes from it.
      boolean wildcard =
          view.wildcard || first && subscribe.isEmpty() && unsubscribe.isEmpty() && !view.explicit;
      for (String name : subscribe) {
        if (Subscription.WILDCARD.equals(name)) {
          wildcard = true;
        } else {
          view.names.add(name);
        }
      }
      for (String name : unsubscribe) {
        if (Subscription.WILDCARD.equals(name)) {
          wildcard = false;
        } else {
          view.names.remove(name);
        }
      }
      view.wildcard = wildcard;
      view.explicit |= !subscribe.isEmpty();
      if ((view.wildcard != wildcardBefore || !view.names.equals(namedBefore))
          && view.names.size() > LIMITS.maxNamesPerRequest()) {
        client.expectedClose = Code.RESOURCE_EXHAUSTED;
        return;
      }
      if (first) {
        // "Incremental reconnect": the client holds these versions from an earlier stream.
        initial.forEach((name, version) -> view.held.put(name, new Held(version, null)));
        view.unmodelled |= initial.keySet().stream().anyMatch(name -> !view.covers(name));
      }
      // A client drops what it unsubscribes from, and all the wildcard brought it when it leaves
      // the wildcard.
      for (String name : unsubscribe) {
        if (namedBefore.contains(name)) {
          view.held.remove(name);
        }
      }
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
      DeltaDiscoveryResponse response;
      try {
        response = DeltaDiscoveryResponse.parseFrom(bytes);
      } catch (InvalidProtocolBufferException e) {
        throw new AssertionError(
            client.label + " was written a response that is not a DeltaDiscoveryResponse", e);
      }
      exchange.add(client.label + " receives " + summary(response));
      TypeUrl type = typeOf(response.getTypeUrl());
      TypeView view = client.types.get(type);
      assertThat(view != null && view.requested)
          .as("a response of a type the stream asked for")
          .isTrue();
      assertThat(response.getNonce()).as("a response has a nonce").isNotEmpty();
      assertThat(client.nonces)
          .as("a response's nonce is new on the stream")
          .doesNotContain(response.getNonce());
      Set<String> names = new HashSet<>();
      for (Resource resource : response.getResourcesList()) {
        assertThat(resource.getName()).as("a resource has a name").isNotEmpty();
        assertThat(resource.getVersion()).as("a resource has a version").isNotEmpty();
        assertThat(resource.getResource().getTypeUrl())
            .as("a resource of the response's type")
            .isEqualTo(type.url());
        assertThat(view.covers(resource.getName()))
            .as("a resource the stream subscribes to: " + resource.getName())
            .isTrue();
        assertThat(names.add(resource.getName()))
            .as("a resource once in a response: " + resource.getName())
            .isTrue();
        view.held.put(resource.getName(), new Held(resource.getVersion(), resource.getResource()));
      }
      for (String removed : response.getRemovedResourcesList()) {
        assertThat(names).as("a resource sent and removed in one response").doesNotContain(removed);
        view.held.remove(removed);
      }
      view.lastNonce = response.getNonce();
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
      for (int round = 0; round < 8 && client.open(); round++) {
        int before = client.nonces.size();
        ackAll(client);
        if (client.nonces.size() == before) {
          break;
        }
      }
      assertThat(client.call.closedWith())
          .as(client.label + " is open after well-formed ACKs")
          .isNull();
      for (TypeUrl type : STORED) {
        TypeView view = client.types.get(type);
        if (view == null || !view.requested || view.unmodelled) {
          continue;
        }
        Map<String, String> expected = new TreeMap<>();
        upstream
            .state(type)
            .forEach(
                (name, resource) -> {
                  if (view.covers(name)) {
                    expected.put(name, resource.version());
                  }
                });
        Map<String, String> held = new TreeMap<>();
        view.held.forEach(
            (name, resource) -> {
              if (view.covers(name)) {
                held.put(name, resource.version());
              }
            });
        assertThat(held)
            .as(
                client.label
                    + " holds each "
                    + type.shortName()
                    + " it subscribes to, at the upstream's version")
            .isEqualTo(expected);
        view.held.forEach(
            (name, resource) -> {
              if (resource.body() != null && expected.containsKey(name)) {
                assertThat(resource.body())
                    .as(client.label + " holds the upstream's " + type.shortName() + " " + name)
                    .isEqualTo(upstream.state(type).get(name).body());
              }
            });
      }
    }

    private static String summary(DeltaDiscoveryResponse response) {
      List<String> names = new ArrayList<>();
      response
          .getResourcesList()
          .forEach(resource -> names.add(resource.getName() + "@" + resource.getVersion()));
      return "type "
          + response.getTypeUrl()
          + " nonce "
          + response.getNonce()
          + " "
          + names
          + " removed "
          + response.getRemovedResourcesList();
    }
  }
}
