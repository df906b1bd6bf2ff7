package io.xdsproxy.core;

import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.WireFormat;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * Turns the resources of an upstream response into {@link XdsResource}s, checking what a proxy must
 * not pass on: a body of another type than the response's, bytes that do not parse as the type, a
 * missing name, the same name twice ("Duplicate Resource Names"). A failure names the resource, so
 * the NACK sent upstream tells the control plane's operator what to fix.
 */
public final class ResourceDecoder {

  private static final String RESOURCE_WRAPPER_URL =
      TypeUrl.PREFIX + Resource.getDescriptor().getFullName();

  /** Field 1, length-delimited: (1 << 3) | WIRETYPE_LENGTH_DELIMITED. */
  private static final int NAME_TAG = (1 << 3) | WireFormat.WIRETYPE_LENGTH_DELIMITED;

  private ResourceDecoder() {}

  /** What one response carried: resources, and heartbeats (wrappers without a body, "TTL"). */
  public record Decoded(List<XdsResource> resources, List<String> heartbeats) {}

  /**
   * Decodes the {@code resources} of a SotW DiscoveryResponse of type {@code type}, each anew or as
   * the resource another group holds with the same bytes ({@link SharedResources}). A group's
   * session decodes the bytes instead, comparing them with what it holds ({@link #decode(TypeUrl,
   * EncodedBodies, Function, List, List)}).
   */
  public static Decoded decode(TypeUrl type, List<Any> bodies) throws InvalidResourceException {
    List<XdsResource> resources = new ArrayList<>(bodies.size());
    List<String> heartbeats = new ArrayList<>();
    Set<String> names = new HashSet<>();
    for (int i = 0; i < bodies.size(); i++) {
      XdsResource resource = fresh(type, i, bodies.get(i), name -> null, heartbeats);
      if (resource != null) {
        checkUnique(names, resource.name(), i);
        resources.add(resource);
      }
    }
    return new Decoded(List.copyOf(resources), List.copyOf(heartbeats));
  }

  /**
   * What a response whose resources are still {@link EncodedBodies} decoded to: its resources and
   * heartbeats, and for each resource its encoding as the next response is compared with (null for
   * one that is not plain, which is always parsed).
   */
  public record DecodedBodies(
      List<XdsResource> resources,
      List<String> heartbeats,
      List<byte[]> encoded,
      List<XdsResource> changed) {}

  /**
   * Decodes the resources of a SotW response from the bytes they arrived in, where {@code
   * previousInOrder} is what the last response decoded to, in its order, each still what {@code
   * previous} holds under its name (the caller passes none where anything else changed what it
   * holds meanwhile): a control plane resends a type's resources in the same order, so a body whose
   * bytes are exactly {@code previousEncoded}'s at its place is the resource held there, found
   * without parsing or looking up anything, and a resend of what the group holds costs a comparison
   * of bytes. A body out of place that is exactly the one {@code previous} holds under its name is
   * that resource; any other is decoded as {@link #decode(TypeUrl, List)} decodes it.
   *
   * <p>{@link DecodedBodies#changed} are the resources that {@code previous} does not hold as they
   * are: what a response that need not repeat everything (an update of some names) changes.
   *
   * @param previousEncoded what {@link DecodedBodies#encoded} was for {@code previousInOrder}
   */
  public static DecodedBodies decode(
      TypeUrl type,
      EncodedBodies bodies,
      Function<String, XdsResource> previous,
      List<XdsResource> previousInOrder,
      List<byte[]> previousEncoded)
      throws InvalidResourceException {
    List<XdsResource> resources = new ArrayList<>(bodies.size());
    List<byte[]> encoded = new ArrayList<>(bodies.size());
    List<String> heartbeats = new ArrayList<>();
    List<XdsResource> changed = new ArrayList<>();
    List<Integer> notInPlace = new ArrayList<>();
    for (int i = 0; i < bodies.size(); i++) {
      int at = resources.size();
      if (at < previousInOrder.size() && at < previousEncoded.size()) {
        XdsResource held = previousInOrder.get(at);
        byte[] bytes = previousEncoded.get(at);
        if (bodies.sameBytes(i, bytes)) {
          resources.add(held);
          encoded.add(bytes);
          continue;
        }
      }
      Any any;
      try {
        any = bodies.parse(i);
      } catch (InvalidProtocolBufferException e) {
        throw new InvalidResourceException("resource #" + i + " is not an Any: " + e.getMessage());
      }
      XdsResource resource = fresh(type, i, any, previous, heartbeats);
      if (resource != null) {
        notInPlace.add(resources.size());
        resources.add(resource);
        encoded.add(bare(resource) ? SharedResources.encoded(resource) : null);
        if (previous.apply(resource.name()) != resource) {
          changed.add(resource);
        }
      }
    }
    checkUnique(resources, notInPlace);
    return new DecodedBodies(
        List.copyOf(resources),
        List.copyOf(heartbeats),
        Collections.unmodifiableList(encoded),
        List.copyOf(changed));
  }

  /**
   * Body {@code index} of a response, not found in its place: a resource held elsewhere, shared by
   * another group or decoded anew; null for a heartbeat, added to {@code heartbeats}.
   */
  private static XdsResource fresh(
      TypeUrl type,
      int index,
      Any any,
      Function<String, XdsResource> previous,
      List<String> heartbeats)
      throws InvalidResourceException {
    if (RESOURCE_WRAPPER_URL.equals(any.getTypeUrl())) {
      Resource wrapper;
      try {
        wrapper = Resource.parseFrom(any.getValue());
      } catch (InvalidProtocolBufferException e) {
        throw new InvalidResourceException(
            "resource #" + index + ": Resource wrapper does not parse: " + e.getMessage());
      }
      if (!wrapper.hasResource()) {
        if (wrapper.getName().isEmpty()) {
          throw new InvalidResourceException(
              "resource #" + index + ": heartbeat Resource wrapper without a name");
        }
        heartbeats.add(wrapper.getName());
        return null;
      }
      return decodeWrapped(type, index, wrapper);
    }
    XdsResource same = unchanged(any, previous);
    if (same == null && type.url().equals(any.getTypeUrl())) {
      same = SharedResources.plain(any); // another group's, checked when it was decoded
    }
    return same != null
        ? same
        : SharedResources.share(XdsResource.of(validatedName(type, index, any, ""), any));
  }

  /** The resource {@code previous} holds with exactly {@code body} and nothing else, if any. */
  private static XdsResource unchanged(Any body, Function<String, XdsResource> previous) {
    String name = nameOf(body.getValue());
    XdsResource held = name.isEmpty() ? null : previous.apply(name);
    return bare(held) && held.body().equals(body) ? held : null;
  }

  /** Whether {@code held} is a resource with no wrapper fields, whose body alone says it all. */
  private static boolean bare(XdsResource held) {
    return held != null && SharedResources.isPlain(held);
  }

  /**
   * Decodes one {@link Resource} wrapper, as Delta responses carry every resource; a plain one
   * equal to one a group holds is that one ({@link SharedResources}).
   */
  public static XdsResource decodeWrapped(TypeUrl type, int index, Resource wrapper)
      throws InvalidResourceException {
    Any body = wrapper.getResource();
    String name = validatedName(type, index, body, wrapper.getName());
    String version =
        wrapper.getVersion().isEmpty() ? Versions.ofContent(body) : wrapper.getVersion();
    return SharedResources.share(
        new XdsResource(
            name,
            version,
            body,
            wrapper.getAliasesList(),
            wrapper.hasTtl() ? Optional.of(wrapper.getTtl()) : Optional.empty(),
            wrapper.hasCacheControl() && wrapper.getCacheControl().getDoNotCache()));
  }

  private static String validatedName(TypeUrl type, int index, Any body, String wrapperName)
      throws InvalidResourceException {
    if (!type.url().equals(body.getTypeUrl())) {
      throw new InvalidResourceException(
          "resource #"
              + index
              + describe(wrapperName)
              + " has type "
              + body.getTypeUrl()
              + ", the response is of type "
              + type);
    }
    Optional<Message> prototype = type.prototype();
    if (prototype.isPresent()) {
      try {
        prototype.get().getParserForType().parseFrom(body.getValue());
      } catch (InvalidProtocolBufferException e) {
        throw new InvalidResourceException(
            "resource #"
                + index
                + describe(wrapperName)
                + " does not parse as "
                + type.shortName()
                + ": "
                + e.getMessage());
      }
    }
    String bodyName = nameOf(body.getValue());
    if (!wrapperName.isEmpty() && !bodyName.isEmpty() && !wrapperName.equals(bodyName)) {
      throw new InvalidResourceException(
          "resource #"
              + index
              + ": Resource wrapper is named '"
              + wrapperName
              + "' but its body is named '"
              + bodyName
              + "'");
    }
    String name = wrapperName.isEmpty() ? bodyName : wrapperName;
    if (name.isEmpty()) {
      throw new InvalidResourceException(
          "resource #" + index + " of type " + type.shortName() + " has no name");
    }
    return name;
  }

  /**
   * The name of an xDS resource: every v3 resource type keeps it in field 1 (Listener.name,
   * ClusterLoadAssignment.cluster_name, …), which lets opaque types be named without their schema.
   * Empty if field 1 is absent or not a string.
   */
  public static String nameOf(ByteString message) {
    try {
      CodedInputStream input = message.newCodedInput();
      for (int tag = input.readTag(); tag != 0; tag = input.readTag()) {
        if (tag == NAME_TAG) {
          return input.readStringRequireUtf8();
        }
        if (!input.skipField(tag)) {
          return "";
        }
      }
    } catch (IOException e) {
      return "";
    }
    return "";
  }

  /**
   * Checks that no name comes twice among {@code resources}, where those not at {@code notInPlace}
   * are the last response's, in its places, whose names were unique: only the others can repeat a
   * name. A few are each compared with every name, which costs less than a set of them all.
   */
  private static void checkUnique(List<XdsResource> resources, List<Integer> notInPlace)
      throws InvalidResourceException {
    if (notInPlace.size() > 8) {
      Set<String> names = new HashSet<>();
      for (int i = 0; i < resources.size(); i++) {
        checkUnique(names, resources.get(i).name(), i);
      }
      return;
    }
    for (int i : notInPlace) {
      String name = resources.get(i).name();
      for (int j = 0; j < resources.size(); j++) {
        if (j != i && resources.get(j).name().equals(name)) {
          throw new InvalidResourceException(
              "resource #"
                  + Math.max(i, j)
                  + ": name '"
                  + name
                  + "' appears twice in one response");
        }
      }
    }
  }

  private static void checkUnique(Set<String> names, String name, int index)
      throws InvalidResourceException {
    if (!names.add(name)) {
      throw new InvalidResourceException(
          "resource #" + index + ": name '" + name + "' appears twice in one response");
    }
  }

  private static String describe(String name) {
    return name.isEmpty() ? "" : " ('" + name + "')";
  }

  /** A resource the proxy must not accept; the message is meant for the upstream's error_detail. */
  public static final class InvalidResourceException extends Exception {
    public InvalidResourceException(String message) {
      super(message);
    }
  }
}
