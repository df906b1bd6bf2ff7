package io.xdsproxy.core;

import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The node the upstream sees for a node group, and which clients may share it. What the control
 * plane sends a group is what it would send that node, and every member is served it: so the node
 * belongs to the group, never to whichever member came first (DESIGN, "Node group"). Either the
 * operator's template makes it from the group's key alone ({@link #template}), or it is the first
 * member's and every later member must equal it in every field a control plane decides entitlement
 * by ({@link #firstMember}); a member that differs is refused, not served another member's
 * entitlement.
 */
public interface UpstreamNodes {

  /** {@code {group}}, or {@code {N}} for the key's N-th part. */
  Pattern PLACEHOLDER = Pattern.compile("\\{(group|[0-9]{1,3})\\}");

  /** The upstream node of the group with {@code key}, opened for a client with {@code first}. */
  Node of(NodeGroupKey key, Node first);

  /**
   * Empty when a client with {@code member} may be served the group whose upstream node is {@code
   * groupNode}; else why not, naming the fields (never another member's values, which are not this
   * client's to see).
   */
  Optional<String> mismatch(Node groupNode, Node member);

  /**
   * The first member's node, with the id {@code idTemplate} when given ({@code {group}} the group's
   * key, {@code {id}} the first member's id): each later member must have the same cluster,
   * locality and metadata, which is where control planes read what a node is entitled to (istiod:
   * namespace, service account, labels, IP, version, all in metadata; java-control-plane's and
   * go-control-plane's groups by id or cluster). The id names a member, not its entitlement, and
   * may differ; so may the fields that say what the client can do (user agent, extensions, client
   * features), which the upstream sees as the first member's.
   */
  static UpstreamNodes firstMember(Optional<String> idTemplate) {
    return new UpstreamNodes() {
      @Override
      public Node of(NodeGroupKey key, Node first) {
        return idTemplate
            .map(
                template ->
                    first.toBuilder()
                        .setId(
                            template.replace("{group}", key.value()).replace("{id}", first.getId()))
                        .build())
            .orElse(first);
      }

      @Override
      public Optional<String> mismatch(Node groupNode, Node member) {
        List<String> fields = new ArrayList<>();
        if (!member.getCluster().equals(groupNode.getCluster())) {
          fields.add("cluster");
        }
        if (!member.getLocality().equals(groupNode.getLocality())) {
          fields.add("locality");
        }
        if (!member.getMetadata().equals(groupNode.getMetadata())) {
          TreeSet<String> keys = new TreeSet<>(member.getMetadata().getFieldsMap().keySet());
          keys.addAll(groupNode.getMetadata().getFieldsMap().keySet());
          for (String key : keys) {
            Value mine = member.getMetadata().getFieldsMap().get(key);
            if (mine == null || !mine.equals(groupNode.getMetadata().getFieldsMap().get(key))) {
              fields.add("metadata." + key);
            }
          }
        }
        if (fields.isEmpty()) {
          return Optional.empty();
        }
        return Optional.of(
            "node '"
                + member.getId()
                + "' differs from the node its group is seen upstream as in "
                + String.join(", ", fields)
                + ": every member of a node group is served what the control plane sends that one"
                + " node, so a member must equal it where control planes read entitlement (or the"
                + " group's upstream node must come from --upstream-node)");
      }
    };
  }

  /**
   * The operator's {@code template}, in which every string (the id, cluster, locality, metadata's
   * strings and keys) has {@code {group}} replaced by the group's key and {@code {1}}, {@code {2}},
   * … by its parts; no member's claims reach the upstream, so every member may share it. The fields
   * that say what the client can do (user agent, extensions, client features) are the first
   * member's where the template leaves them out: they change how a control plane encodes what it
   * sends, not what a node is entitled to.
   */
  static UpstreamNodes template(Node template) {
    return new UpstreamNodes() {
      @Override
      public Node of(NodeGroupKey key, Node first) {
        List<String> parts = key.parts();
        Node.Builder node = template.toBuilder();
        node.setId(filled(template.getId(), key, parts));
        node.setCluster(filled(template.getCluster(), key, parts));
        if (template.hasLocality()) {
          node.getLocalityBuilder()
              .setRegion(filled(template.getLocality().getRegion(), key, parts))
              .setZone(filled(template.getLocality().getZone(), key, parts))
              .setSubZone(filled(template.getLocality().getSubZone(), key, parts));
        }
        node.setMetadata(filled(template.getMetadata(), key, parts));
        if (template.getUserAgentName().isEmpty()) {
          node.setUserAgentName(first.getUserAgentName());
          switch (first.getUserAgentVersionTypeCase()) {
            case USER_AGENT_VERSION -> node.setUserAgentVersion(first.getUserAgentVersion());
            case USER_AGENT_BUILD_VERSION ->
                node.setUserAgentBuildVersion(first.getUserAgentBuildVersion());
            default -> {}
          }
        }
        if (template.getExtensionsCount() == 0) {
          node.addAllExtensions(first.getExtensionsList());
        }
        if (template.getClientFeaturesCount() == 0) {
          node.addAllClientFeatures(first.getClientFeaturesList());
        }
        return node.build();
      }

      @Override
      public Optional<String> mismatch(Node groupNode, Node member) {
        return Optional.empty();
      }
    };
  }

  /**
   * {@code text} with its placeholders replaced, in one pass over the template: a key's part is
   * never read for placeholders of its own, whatever a client put in it.
   */
  private static String filled(String text, NodeGroupKey key, List<String> parts) {
    if (text.indexOf('{') < 0) {
      return text;
    }
    Matcher placeholder = PLACEHOLDER.matcher(text);
    StringBuilder filled = new StringBuilder();
    while (placeholder.find()) {
      String name = placeholder.group(1);
      String value;
      if (name.equals("group")) {
        value = key.value();
      } else {
        int index = Integer.parseInt(name);
        value = index >= 1 && index <= parts.size() ? parts.get(index - 1) : placeholder.group();
      }
      placeholder.appendReplacement(filled, Matcher.quoteReplacement(value));
    }
    placeholder.appendTail(filled);
    return filled.toString();
  }

  private static Struct filled(Struct struct, NodeGroupKey key, List<String> parts) {
    Struct.Builder filled = Struct.newBuilder();
    struct
        .getFieldsMap()
        .forEach(
            (name, value) -> filled.putFields(filled(name, key, parts), filled(value, key, parts)));
    return filled.build();
  }

  private static Value filled(Value value, NodeGroupKey key, List<String> parts) {
    return switch (value.getKindCase()) {
      case STRING_VALUE ->
          Value.newBuilder().setStringValue(filled(value.getStringValue(), key, parts)).build();
      case STRUCT_VALUE ->
          Value.newBuilder().setStructValue(filled(value.getStructValue(), key, parts)).build();
      case LIST_VALUE -> {
        Value.Builder list = Value.newBuilder();
        for (Value item : value.getListValue().getValuesList()) {
          list.getListValueBuilder().addValues(filled(item, key, parts));
        }
        yield list.build();
      }
      default -> value;
    };
  }
}
