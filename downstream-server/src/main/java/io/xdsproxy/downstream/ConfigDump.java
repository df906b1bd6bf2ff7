package io.xdsproxy.downstream;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonNull;
import com.google.gson.JsonSerializer;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.util.Durations;
import com.google.protobuf.util.JsonFormat;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.util.Base64;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * {@code GET /config_dump}: every node group's store as JSON, for an operator asking what the proxy
 * would serve. Secrets are redacted: their names and versions are shown, never their contents.
 */
final class ConfigDump {

  /** Pretty JSON, as operators read it; Optionals as their value or null. */
  static final Gson GSON = new GsonBuilder()
      .setPrettyPrinting()
      .disableHtmlEscaping()
      .registerTypeHierarchyAdapter(Optional.class, (JsonSerializer<Optional<?>>) (value, type, context) ->
          value.isPresent() ? context.serialize(value.get()) : JsonNull.INSTANCE)
      .serializeNulls()
      .create();

  private final NodeGroups groups;

  ConfigDump(NodeGroups groups) {
    this.groups = groups;
  }

  String json() {
    JsonArray dump = new JsonArray();
    groups.groups().stream().sorted(Comparator.comparing(group -> group.key().value())).forEach(group -> {
      JsonObject entry = new JsonObject();
      entry.addProperty("group", group.key().value());
      entry.addProperty("upstream_node_id", group.upstreamNode().getId());
      JsonArray types = new JsonArray();
      Map<TypeUrl, TypeSnapshot> snapshots = new TreeMap<>(group.store().snapshots());
      snapshots.values().forEach(snapshot -> types.add(type(snapshot)));
      entry.add("types", types);
      dump.add(entry);
    });
    JsonObject root = new JsonObject();
    root.add("groups", dump);
    return GSON.toJson(root) + "\n";
  }

  private static JsonObject type(TypeSnapshot snapshot) {
    JsonObject type = new JsonObject();
    type.addProperty("type_url", snapshot.type().url());
    type.addProperty("version", snapshot.version());
    type.addProperty("complete", snapshot.isComplete());
    JsonArray resources = new JsonArray();
    new TreeMap<>(snapshot.resources()).values().forEach(resource -> resources.add(resource(snapshot.type(), resource)));
    type.add("resources", resources);
    return type;
  }

  private static JsonObject resource(TypeUrl type, XdsResource resource) {
    JsonObject entry = new JsonObject();
    entry.addProperty("name", resource.name());
    entry.addProperty("version", resource.version());
    if (!resource.aliases().isEmpty()) {
      JsonArray aliases = new JsonArray();
      resource.aliases().forEach(aliases::add);
      entry.add("aliases", aliases);
    }
    resource.ttl().ifPresent(ttl -> entry.addProperty("ttl", Durations.toString(ttl)));
    if (resource.doNotCache()) {
      entry.addProperty("do_not_cache", true);
    }
    if (type.equals(TypeUrl.SECRET)) {
      entry.addProperty("resource", "[redacted]");
    } else {
      entry.add("resource", body(resource.body()));
    }
    return entry;
  }

  /** The body in proto3 JSON; a type the proxy has no schema for, as its bytes. */
  private static com.google.gson.JsonElement body(Any body) {
    try {
      return JsonParser.parseString(JsonFormat.printer().usingTypeRegistry(ApiTypes.json()).print(body));
    } catch (InvalidProtocolBufferException e) {
      JsonObject opaque = new JsonObject();
      opaque.addProperty("@type", body.getTypeUrl());
      opaque.addProperty("value_base64", Base64.getEncoder().encodeToString(body.getValue().toByteArray()));
      return opaque;
    }
  }
}
