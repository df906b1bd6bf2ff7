package io.xdsproxy.downstream.xds;

import com.google.protobuf.Timestamp;
import io.envoyproxy.envoy.admin.v3.UpdateFailureState;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.status.v3.ClientConfig;
import io.envoyproxy.envoy.service.status.v3.ClientConfig.GenericXdsConfig;
import io.envoyproxy.envoy.service.status.v3.ClientStatusDiscoveryServiceGrpc.ClientStatusDiscoveryServiceImplBase;
import io.envoyproxy.envoy.service.status.v3.ClientStatusRequest;
import io.envoyproxy.envoy.service.status.v3.ClientStatusResponse;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.xdsproxy.core.LimitedLog;
import io.xdsproxy.core.LogFields;
import io.xdsproxy.core.Redaction;
import io.xdsproxy.downstream.xds.ClientStatusAccess.Refused;
import io.xdsproxy.downstream.xds.ClientStatusAccess.Scope;
import java.net.SocketAddress;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * Client status (CSDS, {@code envoy.service.status.v3.ClientStatusDiscoveryService}): the proxy's
 * view of each downstream client, one {@link ClientConfig} per open stream, with every resource the
 * client subscribed to as a {@link GenericXdsConfig}: what the proxy last sent it, and whether the
 * client ACKed or NACKed it. Each stream tells its own status on its own executor; nothing here
 * blocks a thread while the streams answer.
 *
 * <p>A caller is told only of the streams {@link ClientStatusAccess} lets it see, from what its own
 * connection proved, read on the call's thread when the call starts ({@link PeerInterceptor}); node
 * matchers narrow that further. Resource contents are shown {@linkplain Redaction redacted}, to
 * every caller, the node itself included: client status is a debugging view, and a private key
 * leaves the proxy only on the stream entitled to it.
 */
public final class ClientStatusDiscovery extends ClientStatusDiscoveryServiceImplBase {

  private static final Logger log = LoggerFactory.getLogger(ClientStatusDiscovery.class);

  /** A caller refused in a loop must not flood the log. */
  private static final LimitedLog refusals = LimitedLog.of(log, Level.WARN);

  private final Clients clients;
  private final ClientStatusAccess access;
  private final StreamMetrics metrics;

  /**
   * @param access whose streams each caller is told of
   * @param metrics where a refused caller is counted ({@code
   *     xds_downstream_denied_total{reason="client_status"}})
   */
  public ClientStatusDiscovery(Clients clients, ClientStatusAccess access, StreamMetrics metrics) {
    this.clients = clients;
    this.access = access;
    this.metrics = metrics;
  }

  @Override
  public void fetchClientStatus(
      ClientStatusRequest request, StreamObserver<ClientStatusResponse> responses) {
    Optional<CompletableFuture<ClientStatusResponse>> answer =
        answer(request, callerScope(), responses);
    answer.ifPresent(
        future ->
            future.whenComplete(
                (response, failure) -> {
                  if (failure != null) {
                    responses.onError(internal(failure));
                  } else {
                    responses.onNext(response);
                    responses.onCompleted();
                  }
                }));
  }

  /**
   * Each request on the stream gets one response, in order; the next request is read only after it.
   */
  @Override
  public StreamObserver<ClientStatusRequest> streamClientStatus(
      StreamObserver<ClientStatusResponse> responseObserver) {
    ServerCallStreamObserver<ClientStatusResponse> responses =
        (ServerCallStreamObserver<ClientStatusResponse>) responseObserver;
    // What the connection proved is in the call's context on the thread that starts the call.
    Scope scope = callerScope();
    // One request at a time, so a client that floods requests queues nothing in the proxy.
    responses.disableAutoRequest();
    responses.setOnCancelHandler(() -> {});
    responses.request(1);
    return new StreamObserver<>() {
      /** The answer to the request being served; the end of the stream waits for it. */
      private CompletableFuture<?> pending = CompletableFuture.completedFuture(null);

      private boolean refused;

      @Override
      public void onNext(ClientStatusRequest request) {
        if (refused) {
          return;
        }
        Optional<CompletableFuture<ClientStatusResponse>> answer =
            answer(request, scope, responses);
        if (answer.isEmpty()) {
          refused = true;
          return;
        }
        pending =
            answer
                .get()
                .whenComplete(
                    (response, failure) -> {
                      if (responses.isCancelled()) {
                        return;
                      }
                      if (failure != null) {
                        responses.onError(internal(failure));
                      } else {
                        responses.onNext(response);
                        responses.request(1);
                      }
                    });
      }

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onCompleted() {
        if (refused) {
          return;
        }
        pending.whenComplete(
            (done, failure) -> {
              if (failure == null && !responses.isCancelled()) {
                responses.onCompleted();
              }
            });
      }
    };
  }

  /**
   * Which streams the caller of the call being started on this thread is told of, and if it is
   * refused, its refusal counted and logged.
   */
  private Scope callerScope() {
    SocketAddress peer = PeerInterceptor.currentPeer();
    Scope scope = access.scope(PeerInterceptor.currentIdentity(), peer);
    if (scope instanceof Refused refusal) {
      metrics.denied("client_status");
      refusals.log(
          LogFields.NONE.peer(peer),
          "refused client status to {} ({}): {}",
          peer,
          escaped(PeerInterceptor.currentIdentity().toString()),
          refusal.why());
    }
    return scope;
  }

  /**
   * The response to {@code request}, of the streams {@code scope} shows, when every stream has told
   * its status; empty when the request was refused on {@code responses}: the caller may be told of
   * nothing, or a matcher is one the proxy cannot apply.
   */
  private Optional<CompletableFuture<ClientStatusResponse>> answer(
      ClientStatusRequest request, Scope scope, StreamObserver<ClientStatusResponse> responses) {
    if (scope instanceof Refused refusal) {
      responses.onError(
          Status.PERMISSION_DENIED.withDescription(refusal.why()).asRuntimeException());
      return Optional.empty();
    }
    Predicate<Node> matches;
    try {
      matches = NodeMatchers.of(request.getNodeMatchersList());
    } catch (IllegalArgumentException e) {
      responses.onError(
          Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
      return Optional.empty();
    }
    boolean withContents = !request.getExcludeResourceContents();
    return Optional.of(
        clients
            .resources()
            .thenApply(
                all -> {
                  ClientStatusResponse.Builder response = ClientStatusResponse.newBuilder();
                  all.stream()
                      .filter(client -> scope.shows(client.identity()))
                      .filter(client -> matches.test(client.node()))
                      .forEach(client -> response.addConfig(config(client, withContents)));
                  return response.build();
                }));
  }

  private static ClientConfig config(Clients.ClientResources client, boolean withContents) {
    ClientConfig.Builder config = ClientConfig.newBuilder().setNode(client.node());
    for (ResourceStatus resource : client.resources()) {
      GenericXdsConfig.Builder entry =
          config
              .addGenericXdsConfigsBuilder()
              .setTypeUrl(resource.type().url())
              .setName(resource.name())
              .setVersionInfo(resource.version())
              .setConfigStatus(resource.configStatus())
              .setClientStatus(resource.clientStatus());
      resource.lastUpdated().ifPresent(at -> entry.setLastUpdated(timestamp(at)));
      // A copy saved to --state-dir before a restart, not yet replaced by the upstream's: served
      // from a file read at start up, which is what is_static_resource says of Envoy's bootstrap
      // resources; last_updated says how old it is.
      client
          .group()
          .savedAt(resource.type(), resource.name())
          .ifPresent(at -> entry.setIsStaticResource(true).setLastUpdated(timestamp(at)));
      if (withContents) {
        resource.resource().map(Redaction::redact).ifPresent(entry::setXdsConfig);
      }
      resource
          .rejection()
          .ifPresent(
              nack ->
                  entry.setErrorState(
                      UpdateFailureState.newBuilder()
                          .setDetails(nack.message())
                          .setVersionInfo(nack.version())
                          .setLastUpdateAttempt(timestamp(nack.at()))));
    }
    return config.build();
  }

  /**
   * A client's text (a certificate's names) for a log line: control characters escaped, so that it
   * stays one line and forges none.
   */
  private static String escaped(String text) {
    StringBuilder escaped = new StringBuilder(text.length());
    text.codePoints()
        .forEach(
            c -> {
              if (Character.isISOControl(c)) {
                escaped.append(String.format("\\u%04x", c));
              } else {
                escaped.appendCodePoint(c);
              }
            });
    return escaped.toString();
  }

  private static Timestamp timestamp(Instant at) {
    return Timestamp.newBuilder().setSeconds(at.getEpochSecond()).setNanos(at.getNano()).build();
  }

  private static RuntimeException internal(Throwable failure) {
    log.error("client status failed", failure);
    return Status.INTERNAL
        .withDescription("xds-proxy could not gather client status: " + failure)
        .asRuntimeException();
  }
}
