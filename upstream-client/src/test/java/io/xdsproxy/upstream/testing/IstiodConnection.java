package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.Status;
import io.grpc.SynchronizationContext;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.upstream.testing.IstiodConfig.Build;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One ADS stream to {@link IstiodModel}, istiod's {@code Connection} with its {@code model.Proxy}:
 * the part SotW and Delta share, receiving (pkg/xds/server.go {@code Receive}) and pushing (ads.go
 * {@code pushConnection}, delta.go {@code pushConnectionDelta}). The subclasses hold the answering
 * rules.
 *
 * <p>Everything here is confined to {@link #context}: requests, push events and the end of the
 * stream are run there one at a time, as istiod runs them on the stream's one goroutine ({@code
 * Stream}'s loop over the request and push channels).
 */
abstract class IstiodConnection<RequestT, ResponseT> {

  /** pkg/xds/server.go {@code WatchedResource}, the fields that change what istiod answers. */
  static final class WatchedResource {
    Set<String> resourceNames;

    /**
     * Delta only, decided once at the type's first request; only istiod's WDS and Address
     * generators read it.
     */
    final boolean wildcard;

    /** The nonce of the last response of the type; empty when none was sent. */
    String nonceSent = "";

    /**
     * SotW only: answer the next request that looks like an ACK (context.go {@code
     * NewWatchedResource}).
     */
    boolean alwaysRespond;

    WatchedResource(Set<String> resourceNames, boolean wildcard) {
      this.resourceNames = Set.copyOf(resourceNames);
      this.wildcard = wildcard;
    }
  }

  final IstiodModel model;
  final long streamId;
  final SynchronizationContext context;

  /** {@code proxy.WatchedResources}, by type URL. */
  final Map<String, WatchedResource> watched = new HashMap<>();

  private final ServerCallStreamObserver<ResponseT> responses;
  private boolean initialized;
  private boolean closed;
  private String group;

  /**
   * The version of {@code proxy.LastPushContext}: what responses to requests carry. Endpoint-only
   * pushes do not move it (ads.go {@code pushConnection} skips {@code computeProxyState} for them).
   */
  String lastPushVersion;

  /** The group's configuration as of the last push this stream went through. */
  IstiodConfig config;

  IstiodConnection(IstiodModel model, long streamId, StreamObserver<ResponseT> responses) {
    this.model = model;
    this.streamId = streamId;
    this.responses = (ServerCallStreamObserver<ResponseT>) responses;
    this.context = new SynchronizationContext((thread, error) -> fail(error));
    // Set before the first response, so that a response after the client went away is dropped, not
    // thrown.
    this.responses.setOnCancelHandler(() -> context.execute(this::close));
  }

  /** The node of a request, or null when it has none. */
  abstract Node nodeOf(RequestT request);

  /** ads.go {@code processRequest} / delta.go {@code processDeltaRequest}. */
  abstract void process(RequestT request);

  /**
   * xdsgen.go {@code pushXds} / delta.go {@code pushDeltaXds}, for a push over the watched names.
   */
  abstract void push(String typeUrl, Set<String> names, Build build, String version);

  /** What gRPC calls with this stream's requests. */
  StreamObserver<RequestT> requests() {
    return new StreamObserver<>() {
      @Override
      public void onNext(RequestT request) {
        model.recordRequest(request);
        context.execute(() -> receive(request));
      }

      @Override
      public void onError(Throwable error) {
        context.execute(IstiodConnection.this::close);
      }

      @Override
      public void onCompleted() {
        // Receive: Recv returns EOF, the stream loop returns nil: the server ends the stream
        // cleanly.
        context.execute(
            () -> {
              if (!closed) {
                responses.onCompleted();
              }
              close();
            });
      }
    };
  }

  /**
   * pkg/xds/server.go {@code Receive}: the first request must carry a node with an id, else the
   * stream ends with InvalidArgument "missing node information"; later requests may leave the node
   * out. ({@code initConnection} also needs istiod's "type~ip~id~domain" id; the model takes any
   * id, so that tests can use their own.)
   */
  private void receive(RequestT request) {
    if (closed) {
      return;
    }
    if (!initialized) {
      Node node = nodeOf(request);
      if (node == null || node.getId().isEmpty()) {
        closed = true;
        responses.onError(
            Status.INVALID_ARGUMENT
                .withDescription("missing node information")
                .asRuntimeException());
        return;
      }
      initialized = true;
      group = node.getCluster();
      // ads.go initConnection: LastPushContext is the global push context when the proxy connects.
      IstiodModel.Connected connected = model.connect(this, node);
      lastPushVersion = connected.pushVersion();
      config = connected.config();
    }
    process(request);
  }

  /**
   * One push event reaching this stream (discovery.go {@code AdsPushAll} reaches every connection):
   * {@code computeProxyState} moves {@code LastPushContext} unless only endpoints changed; {@code
   * ProxyNeedsPush} lets through only a change of this stream's own group; then every watched type,
   * in {@code PushOrder}, goes to its generator, which decides whether there is anything to send.
   */
  void onPush(IstiodModel.PushEvent event) {
    context.throwIfNotInThisSynchronizationContext();
    if (closed) {
      return;
    }
    if (!event.change().onlyEndpoints()) {
      lastPushVersion = event.pushVersion();
    }
    if (!event.group().equals(group)) {
      return;
    }
    config = event.config();
    for (String typeUrl : watchedByOrder()) {
      WatchedResource watch = watched.get(typeUrl);
      if (watch != null) {
        push(typeUrl, watch.resourceNames, event.change().buildFor(typeUrl), event.pushVersion());
      }
    }
  }

  /** ads.go {@code watchedResourcesByOrder}: PushOrder first, then any other watched type. */
  private List<String> watchedByOrder() {
    List<String> ordered = new ArrayList<>();
    IstiodConfig.PUSH_ORDER.stream().filter(watched::containsKey).forEach(ordered::add);
    watched.keySet().stream()
        .filter(typeUrl -> !IstiodConfig.PUSH_ORDER.contains(typeUrl))
        .forEach(ordered::add);
    return ordered;
  }

  void send(ResponseT response) {
    if (closed) {
      return;
    }
    // Counted before it is written: a client that has it finds it counted.
    model.responseSent();
    responses.onNext(response);
  }

  /**
   * The watch of a type a response was sent for; pkg/xds/server.go {@code Send} creates it if
   * missing.
   */
  WatchedResource sentFor(String typeUrl, String nonce) {
    WatchedResource watch =
        watched.computeIfAbsent(typeUrl, type -> new WatchedResource(Set.of(), false));
    watch.nonceSent = nonce;
    return watch;
  }

  private void close() {
    closed = true;
    model.disconnect(this);
  }

  private void fail(Throwable error) {
    if (!closed) {
      closed = true;
      responses.onError(
          Status.INTERNAL
              .withDescription("istiod model failed: " + error)
              .withCause(error)
              .asRuntimeException());
    }
    model.disconnect(this);
  }
}
