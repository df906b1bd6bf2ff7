package io.xdsproxy.app;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonSerializer;
import com.google.gson.stream.JsonWriter;
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.Durations;
import com.google.protobuf.util.JsonFormat;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.AuditComparison.Difference;
import io.xdsproxy.core.GroupAuditor;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.Redaction;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.downstream.xds.HttpReplies;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET /config_dump}: the node groups' stores as JSON, for an operator asking what the proxy
 * would serve, narrowed by the query ({@link ConfigDumpFilter}). Every resource is shown
 * {@linkplain Redaction redacted}, as Envoy's admin shows its config dump: a Secret's name, version
 * and certificate chain, never its private key, nor a key inlined in a Listener or Cluster.
 *
 * <p>A proxy's stores may hold many thousands of resources: the dump is written group by group,
 * type by type and resource by resource to the response as it is read, never made whole in memory.
 */
final class ConfigDump implements HttpHandler {

  /** Pretty JSON, as operators read it; Optionals as their value or null. */
  static final Gson GSON =
      new GsonBuilder()
          .setPrettyPrinting()
          .disableHtmlEscaping()
          .registerTypeHierarchyAdapter(
              Optional.class,
              (JsonSerializer<Optional<?>>)
                  (value, type, context) ->
                      value.isPresent() ? context.serialize(value.get()) : JsonNull.INSTANCE)
          .serializeNulls()
          .create();

  private static final Logger log = LoggerFactory.getLogger(ConfigDump.class);
  private static final JsonFormat.Printer PROTO3_JSON =
      JsonFormat.printer().usingTypeRegistry(ApiTypes.json());

  private final NodeGroups groups;
  private final Clock clock;
  private final Function<NodeGroupKey, Optional<GroupAuditor.Result>> audits;
  private final boolean auditing;

  /**
   * @param clock what the age of a state saved before a restart is measured against
   */
  ConfigDump(NodeGroups groups, Clock clock) {
    this(groups, clock, group -> Optional.empty(), false);
  }

  /**
   * @param clock what the age of a state saved before a restart is measured against
   * @param audits each group's last audit
   * @param auditing whether groups are audited: only then does a group show its {@code audit}
   */
  ConfigDump(
      NodeGroups groups,
      Clock clock,
      Function<NodeGroupKey, Optional<GroupAuditor.Result>> audits,
      boolean auditing) {
    this.groups = groups;
    this.clock = clock;
    this.audits = audits;
    this.auditing = auditing;
  }

  @Override
  public void handle(HttpExchange exchange) throws IOException {
    ConfigDumpFilter filter;
    try {
      filter = ConfigDumpFilter.parse(exchange.getRequestURI().getRawQuery());
    } catch (IllegalArgumentException e) {
      HttpReplies.text(exchange, 400, e.getMessage() + "\n");
      return;
    }
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    // Length 0: chunked, so the body can be written before its length is known.
    exchange.sendResponseHeaders(200, 0);
    try (Writer body =
        new BufferedWriter(
            new OutputStreamWriter(exchange.getResponseBody(), StandardCharsets.UTF_8))) {
      write(body, filter);
    } catch (IOException | RuntimeException e) {
      // The status is sent: all that is left is to cut the body short, so the client sees it
      // broken.
      log.debug("config dump to {} cut short: {}", exchange.getRemoteAddress(), e.toString());
      exchange.close();
    }
  }

  private void write(Writer body, ConfigDumpFilter filter) throws IOException {
    JsonWriter json = new JsonWriter(body);
    json.setIndent("  ");
    json.beginObject().name("groups").beginArray();
    List<NodeGroup> sorted =
        groups.groups().stream()
            .filter(filter::includes)
            .sorted(Comparator.comparing(group -> group.key().value()))
            .toList();
    for (NodeGroup group : sorted) {
      List<TypeSnapshot> types =
          new TreeMap<>(group.store().snapshots())
              .values().stream()
                  .filter(snapshot -> filter.includes(snapshot.type()))
                  .filter(
                      snapshot ->
                          !filter.narrowsNames()
                              || snapshot.resources().keySet().stream()
                                  .anyMatch(filter::includesName))
                  .toList();
      // What a filter of types or names leaves empty is left out, so a search shows only its finds.
      if (types.isEmpty() && (filter.type().isPresent() || filter.narrowsNames())) {
        continue;
      }
      json.beginObject();
      json.name("group").value(group.key().value());
      json.name("upstream_node_id").value(group.upstreamNode().getId());
      if (auditing) {
        audit(json, audits.apply(group.key()));
      }
      json.name("types").beginArray();
      Map<TypeUrl, Instant> fromDisk = group.fromDisk();
      for (TypeSnapshot snapshot : types) {
        type(json, snapshot, filter, Optional.ofNullable(fromDisk.get(snapshot.type())));
      }
      json.endArray();
      json.endObject();
    }
    json.endArray().endObject();
    json.flush();
    body.write("\n");
  }

  /** The group's last audit; null before its first. */
  private static void audit(JsonWriter json, Optional<GroupAuditor.Result> last)
      throws IOException {
    json.name("audit");
    if (last.isEmpty()) {
      json.nullValue();
      return;
    }
    GroupAuditor.Result result = last.get();
    json.beginObject();
    json.name("time").value(result.at().toString());
    json.name("node_id").value(result.node());
    json.name("result").value(result.outcome().label());
    json.name("detail").value(result.detail());
    json.name("differences").beginArray();
    for (Difference difference : result.differences()) {
      json.beginObject();
      json.name("type_url").value(difference.type().url());
      json.name("name").value(difference.name());
      json.name("difference").value(difference.kind().label());
      json.endObject();
    }
    json.endArray();
    json.endObject();
  }

  /**
   * @param savedAt when the state of a type that is still (in part) the one saved before a restart
   *     was saved: it is marked "from_disk", with its age
   */
  private void type(
      JsonWriter json, TypeSnapshot snapshot, ConfigDumpFilter filter, Optional<Instant> savedAt)
      throws IOException {
    json.beginObject();
    json.name("type_url").value(snapshot.type().url());
    json.name("version").value(snapshot.version());
    json.name("complete").value(snapshot.isComplete());
    if (savedAt.isPresent()) {
      json.name("from_disk").beginObject();
      json.name("saved_at").value(savedAt.get().toString());
      json.name("age_seconds").value(Duration.between(savedAt.get(), clock.instant()).toSeconds());
      json.endObject();
    }
    json.name("resources").beginArray();
    for (XdsResource resource : new TreeMap<>(snapshot.resources()).values()) {
      if (filter.includesName(resource.name())) {
        resource(json, resource);
      }
    }
    json.endArray();
    json.endObject();
  }

  private static void resource(JsonWriter json, XdsResource resource) throws IOException {
    json.beginObject();
    json.name("name").value(resource.name());
    json.name("version").value(resource.version());
    if (!resource.aliases().isEmpty()) {
      json.name("aliases").beginArray();
      for (String alias : resource.aliases()) {
        json.value(alias);
      }
      json.endArray();
    }
    if (resource.ttl().isPresent()) {
      json.name("ttl").value(Durations.toString(resource.ttl().get()));
    }
    if (resource.doNotCache()) {
      json.name("do_not_cache").value(true);
    }
    json.name("resource");
    GSON.toJson(body(Redaction.redact(resource.body())), json);
    json.endObject();
  }

  /**
   * The (redacted) body in proto3 JSON; one the proxy cannot print, as its bytes: a type it has no
   * schema for inside it (whose own bytes redaction hid), or a type it has none for, whose bytes
   * are hidden altogether.
   */
  private static JsonElement body(Any body) {
    try {
      return JsonParser.parseString(PROTO3_JSON.print(body));
    } catch (InvalidProtocolBufferException e) {
      JsonObject opaque = new JsonObject();
      opaque.addProperty("@type", body.getTypeUrl());
      if (body.getValue().toStringUtf8().equals(Redaction.REDACTED)) {
        opaque.addProperty("value", Redaction.REDACTED);
      } else {
        opaque.addProperty(
            "value_base64", Base64.getEncoder().encodeToString(body.getValue().toByteArray()));
      }
      return opaque;
    }
  }
}
