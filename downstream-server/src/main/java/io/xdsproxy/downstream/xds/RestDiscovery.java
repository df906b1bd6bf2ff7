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
import io.xdsproxy.core.NodeGrouping.NotEntitledException;
import io.xdsproxy.core.NodeGrouping.UngroupableNodeException;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.SerialExecutor;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.VerifiedIdentity;
import io.xdsproxy.core.Versions;
import io.xdsproxy.core.XdsResource;
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
 * <p>The caller is checked as a gRPC stream's client is ({@link Access}, from what its HTTPS
 * exchange proved): the node it names must be one its TLS client certificate allows, its group one
 * the certificate entitles it to, and Secrets only for a client whose group the certificate
 * decides, or it gets {@code 403}; opening a group is within the same limits ({@code 429}), and the
 * node's sizes are checked as a stream's are ({@link NodeLimits}, {@code 413} past one). The checks
 * come before the node is grouped, so a refused caller opens no group and no upstream session.
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
  private final Access access;
  private final Limits limits;
  private final StreamMetrics metrics;

  /**
   * @param access the xDS port's rules of who may be served what, applied to what the HTTPS
   *     exchange proved
   * @param limits the xDS port's, of which REST checks the node's sizes and the node groups
   * @param metrics where a poll refused for a limit or an entitlement is counted, as a stream is
   */
  public RestDiscovery(
      NodeGroups groups,
      Executor pool,
      ScheduledExecutorService timer,
      Duration longPollTimeout,
      Access access,
      Limits limits,
      StreamMetrics metrics) {
    this.groups = groups;
    this.pool = pool;
    this.timer = timer;
    this.longPollTimeout = longPollTimeout;
    this.access = access;
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
    // Over plain HTTP there is no certificate: the exchange proves nothing.
    SSLSession session = exchange instanceof HttpsExchange https ? https.getSSLSession() : null;
    VerifiedIdentity identity = ClientIdentities.of(session, exchange.getRemoteAddress());
    String nodeId = request.getNode().getId();
    Optional<String> wrongNode = access.nodeIdRefusal(nodeId, identity);
    Optional<String> notForIt = access.typeRefusal(type, identity, nodeId);
    if (wrongNode.isPresent() || notForIt.isPresent()) {
      metrics.denied(wrongNode.isPresent() ? "node_id" : "secrets");
      refuse(type, exchange, nodeId, 403, wrongNode.or(() -> notForIt).get());
      return;
    }
    NodeGroup group;
    try {
      group = groups.acquire(request.getNode(), identity, limits.groups());
    } catch (NotEntitledException e) {
      metrics.denied(e.memberMismatch() ? "upstream_node" : "identity");
      refuse(type, exchange, nodeId, 403, e.getMessage());
      return;
    } catch (UngroupableNodeException e) {
      HttpReplies.text(exchange, 400, e.getMessage() + "\n");
      return;
    } catch (NodeGroups.GroupFullException e) {
      metrics.limited(e.limit());
      refuse(type, exchange, nodeId, 429, e.getMessage() + " (" + e.flag() + ")");
      return;
    }
    new Poll(type, request, group, exchange).start();
  }

  /**
   * Answers {@code exchange} with {@code code} and {@code why}, logged in one line (limited), with
   * {@code nodeId} when it is within the limits.
   */
  private static void refuse(
      TypeUrl type, HttpExchange exchange, String nodeId, int code, String why) throws IOException {
    refusals.log(
        LogFields.NONE.node(nodeId).type(type).peer(exchange.getRemoteAddress()),
        "refused REST {} poll from {}: {}",
        type.shortName(),
        exchange.getRemoteAddress(),
        why);
    HttpReplies.text(exchange, code, why + "\n");
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

    /** The poll's names would take what its group asks of its upstream past the bound. */
    @Override
    public void onRefused(NodeGroups.GroupFullException refusal) {
      String nodeId = request.getNode().getId();
      String why = refusal.getMessage() + " (node '" + nodeId + "'; " + refusal.flag() + ")";
      executor.execute(
          () -> {
            if (!done) {
              refusals.log(
                  LogFields.NONE.node(nodeId).type(type).peer(exchange.getRemoteAddress()),
                  "refused REST {} poll from {}: {}",
                  type.shortName(),
                  exchange.getRemoteAddress(),
                  why);
              finish(429, why + "\n");
            }
          });
    }

    private void answerIfChanged(TypeSnapshot snapshot) {
      if (done) {
        return;
      }
      state.update(snapshot);
      Optional<SotwOutgoing> outgoing = state.nextResponse(false);
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
