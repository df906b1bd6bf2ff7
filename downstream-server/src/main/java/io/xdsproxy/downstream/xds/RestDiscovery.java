package io.xdsproxy.downstream.xds;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.JsonFormat;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpsExchange;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.ClientStrings;
import io.xdsproxy.core.GroupWatcher;
import io.xdsproxy.core.LimitedLog;
import io.xdsproxy.core.LogFields;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.NodeGrouping.UngroupableNodeException;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.SerialExecutor;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.Versions;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.downstream.xds.SotwTypeState.Outgoing;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * REST-JSON polling ("REST-JSON polling subscriptions"): {@code POST /v3/discovery:<type>} with a
 * DiscoveryRequest in proto3 JSON, answered with a DiscoveryResponse in proto3 JSON. When the
 * request already holds the version the proxy would answer with, the answer waits for a change
 * (long polling) and, if none comes within the timeout, is {@code 304 Not Modified}.
 *
 * <p>A poll is a one-request SotW stream: it holds its node group and a subscription while it
 * waits, and nothing after. No thread waits with it: the answer is written from the group's
 * notification.
 *
 * <p>The caller is checked as a gRPC stream's client is ({@link PeerInterceptor}): with a node id
 * pattern, the node it names must be one its TLS client certificate allows, or it gets {@code 403}.
 * Secrets are stricter over REST than over gRPC: they are answered only to a caller that check let
 * through, because a REST port is easily reached by what was never meant to be an xDS client. The
 * node's sizes are checked as a stream's are ({@link NodeLimits}, {@code 413} past one). These
 * checks come before the node is grouped, so a refused caller opens no group and no upstream
 * session.
 */
public final class RestDiscovery {

  private static final Logger log = LoggerFactory.getLogger(RestDiscovery.class);

  /** A caller refused in a loop must not flood the log. */
  private static final LimitedLog refusals = LimitedLog.of(log, Level.WARN);

  /** Largest request body read; a DiscoveryRequest is a node and some names. */
  static final int MAX_REQUEST_BYTES = 1024 * 1024;

  /** The paths of the singleton APIs, as the xDS services' HTTP annotations name them. */
  public static final Map<String, TypeUrl> PATHS =
      Map.of(
          "/v3/discovery:listeners", TypeUrl.LISTENER,
          "/v3/discovery:routes", TypeUrl.ROUTE,
          "/v3/discovery:scoped-routes", TypeUrl.SCOPED_ROUTE,
          "/v3/discovery:clusters", TypeUrl.CLUSTER,
          "/v3/discovery:endpoints", TypeUrl.ENDPOINT,
          "/v3/discovery:secrets", TypeUrl.SECRET,
          "/v3/discovery:runtime", TypeUrl.RUNTIME);

  private final NodeGroups groups;
  private final Executor pool;
  private final ScheduledExecutorService timer;
  private final Duration longPollTimeout;
  private final Optional<NodeIdPattern> nodeIdPattern;
  private final Limits limits;
  private final StreamMetrics metrics;

  /**
   * @param nodeIdPattern the xDS port's {@code --tls-node-id-pattern}, checked against the client
   *     certificate of the HTTPS exchange; empty: any node, and no Secrets
   * @param limits the xDS port's, of which REST checks the node's sizes
   * @param metrics where a poll refused for a limit is counted, as a stream is
   */
  public RestDiscovery(
      NodeGroups groups,
      Executor pool,
      ScheduledExecutorService timer,
      Duration longPollTimeout,
      Optional<NodeIdPattern> nodeIdPattern,
      Limits limits,
      StreamMetrics metrics) {
    this.groups = groups;
    this.pool = pool;
    this.timer = timer;
    this.longPollTimeout = longPollTimeout;
    this.nodeIdPattern = nodeIdPattern;
    this.limits = limits;
    this.metrics = metrics;
  }

  /** The handler of {@code type}'s path. */
  public HttpHandler handler(TypeUrl type) {
    return exchange -> {
      try {
        poll(type, exchange);
      } catch (IOException | RuntimeException e) {
        LogFields.NONE
            .type(type)
            .peer(exchange.getRemoteAddress())
            .addTo(log.atWarn())
            .log(
                "REST {} poll from {} failed: {}",
                type.shortName(),
                exchange.getRemoteAddress(),
                e.toString());
        exchange.close();
      }
    };
  }

  private void poll(TypeUrl type, HttpExchange exchange) throws IOException {
    if (!"POST".equals(exchange.getRequestMethod())) {
      exchange.getResponseHeaders().set("Allow", "POST");
      HttpReplies.text(exchange, 405, "POST a DiscoveryRequest in proto3 JSON\n");
      return;
    }
    DiscoveryRequest request;
    try (InputStream body = exchange.getRequestBody()) {
      byte[] bytes = body.readNBytes(MAX_REQUEST_BYTES + 1);
      if (bytes.length > MAX_REQUEST_BYTES) {
        HttpReplies.text(
            exchange, 413, "a DiscoveryRequest may have at most " + MAX_REQUEST_BYTES + " bytes\n");
        return;
      }
      DiscoveryRequest.Builder builder = DiscoveryRequest.newBuilder();
      JsonFormat.parser()
          .usingTypeRegistry(ApiTypes.json())
          .merge(new String(bytes, StandardCharsets.UTF_8), builder);
      request = builder.build();
    } catch (InvalidProtocolBufferException | RuntimeException e) {
      HttpReplies.text(
          exchange, 400, "not a DiscoveryRequest in proto3 JSON: " + e.getMessage() + "\n");
      return;
    }
    if (!request.getTypeUrl().isEmpty() && !request.getTypeUrl().equals(type.url())) {
      HttpReplies.text(
          exchange,
          400,
          "type_url "
              + ClientStrings.shown(request.getTypeUrl())
              + " posted to the "
              + type.shortName()
              + " path\n");
      return;
    }
    if (!request.hasNode()) {
      HttpReplies.text(exchange, 400, "a REST DiscoveryRequest must carry the node\n");
      return;
    }
    Optional<NodeLimits.Refusal> tooLarge = NodeLimits.refusal(request.getNode(), limits);
    if (tooLarge.isPresent()) {
      metrics.limited(tooLarge.get().limit());
      refuse(type, exchange, null, 413, tooLarge.get().why());
      return;
    }
    Optional<String> refusal = refusal(type, request.getNode().getId(), exchange);
    if (refusal.isPresent()) {
      refuse(type, exchange, request.getNode().getId(), 403, refusal.get());
      return;
    }
    NodeGroup group;
    try {
      group = groups.acquire(request.getNode());
    } catch (UngroupableNodeException e) {
      HttpReplies.text(exchange, 400, e.getMessage() + "\n");
      return;
    }
    new Poll(type, request, group, exchange).start();
  }

  /**
   * Answers {@code exchange} with {@code status} and {@code why}, logged in one line (limited),
   * with {@code nodeId} when it is within the limits.
   */
  private void refuse(TypeUrl type, HttpExchange exchange, String nodeId, int status, String why)
      throws IOException {
    refusals.log(
        LogFields.NONE.node(nodeId).type(type).peer(exchange.getRemoteAddress()),
        "refused REST {} poll from {}: {}",
        type.shortName(),
        exchange.getRemoteAddress(),
        why);
    HttpReplies.text(exchange, status, why + "\n");
  }

  /**
   * Empty when the caller of {@code exchange} may poll {@code type} as node {@code nodeId}; else
   * why not.
   */
  private Optional<String> refusal(TypeUrl type, String nodeId, HttpExchange exchange) {
    if (nodeIdPattern.isEmpty()) {
      return type.equals(TypeUrl.SECRET)
          ? Optional.of(
              "Secrets are served over REST-JSON only to a client authenticated by its certificate and node"
                  + " id: the proxy needs --tls-cert, --tls-key, --tls-client-ca and --tls-node-id-pattern (node '"
                  + nodeId
                  + "')")
          : Optional.empty();
    }
    // Over plain HTTP there is no certificate, and the pattern refuses every node.
    SSLSession session = exchange instanceof HttpsExchange https ? https.getSSLSession() : null;
    return nodeIdPattern.get().forSession(session).refusal(nodeId);
  }

  /** One long poll: a watcher of its group until it answers. */
  private final class Poll implements GroupWatcher {
    private final TypeUrl type;
    private final DiscoveryRequest request;
    private final NodeGroup group;
    private final HttpExchange exchange;
    private final SerialExecutor executor;
    private final SotwTypeState state;
    private ScheduledFuture<?> timeout;
    private boolean done;

    Poll(TypeUrl type, DiscoveryRequest request, NodeGroup group, HttpExchange exchange) {
      this.type = type;
      this.request = request;
      this.group = group;
      this.exchange = exchange;
      this.executor = new SerialExecutor(pool, "REST poll from " + exchange.getRemoteAddress());
      this.state = new SotwTypeState(type, group.snapshot(type), false);
    }

    void start() {
      executor.execute(
          () -> {
            state.subscribe(request.getResourceNamesList());
            group.subscribe(this, type, state.subscription().interest());
            timeout =
                timer.schedule(
                    () -> executor.execute(() -> finish(304, null)),
                    longPollTimeout.toMillis(),
                    TimeUnit.MILLISECONDS);
            answerIfChanged(group.snapshot(type));
          });
    }

    @Override
    public void onSnapshots(List<TypeSnapshot> snapshots) {
      executor.execute(() -> answerIfChanged(group.snapshot(type)));
    }

    private void answerIfChanged(TypeSnapshot snapshot) {
      if (done) {
        return;
      }
      state.update(snapshot);
      Optional<Outgoing> outgoing = state.nextResponse(false);
      if (outgoing.isEmpty()) {
        return;
      }
      List<XdsResource> resources = outgoing.get().included();
      String version = Versions.ofResources(resources);
      if (version.equals(request.getVersionInfo())) {
        return;
      }
      DiscoveryResponse response =
          DiscoveryResponse.newBuilder()
              .setVersionInfo(version)
              .setTypeUrl(type.url())
              .addAllResources(state.encode(outgoing.get()))
              .build();
      try {
        finish(200, JsonFormat.printer().usingTypeRegistry(ApiTypes.json()).print(response));
      } catch (InvalidProtocolBufferException e) {
        finish(500, "cannot print the response as JSON: " + e.getMessage() + "\n");
      }
    }

    private void finish(int status, String body) {
      if (done) {
        return;
      }
      done = true;
      if (timeout != null) {
        timeout.cancel(false);
      }
      group.leave(this);
      groups.release(group);
      try {
        if (status == 304) {
          exchange.sendResponseHeaders(304, -1);
          exchange.close();
        } else {
          exchange
              .getResponseHeaders()
              .set("Content-Type", status == 200 ? "application/json" : "text/plain");
          HttpReplies.text(exchange, status, body);
        }
      } catch (IOException e) {
        LogFields.NONE
            .node(request.getNode().getId())
            .group(group.key())
            .type(type)
            .peer(exchange.getRemoteAddress())
            .addTo(log.atDebug())
            .log(
                "REST poll from {}: the client left before its answer: {}",
                exchange.getRemoteAddress(),
                e.toString());
        exchange.close();
      }
    }
  }
}
