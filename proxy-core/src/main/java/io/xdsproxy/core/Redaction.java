package io.xdsproxy.core;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.Struct;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.TlsCertificate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the proxy shows of a resource to anyone but the client entitled to it (client status, the
 * admin port's dump): the resource with every field the API marks {@code (udpa.annotations.
 * sensitive) = true} redacted, wherever it occurs (a Secret's private key and password, a session
 * ticket key, a generic secret, an HMAC secret, a private key inlined in a Listener's transport
 * socket), as Envoy's admin does ({@code source/common/protobuf/utility.cc}, {@code
 * MessageUtil::redact} and its helpers {@code redact}, {@code redactOpaque}): the descriptors are
 * walked generically, {@code Any} and {@code TypedStruct} are reified to the type they name (from
 * {@link ApiTypes}) and redacted inside; a sensitive string or bytes field becomes {@value
 * #REDACTED}, any other sensitive scalar is cleared, everything under a sensitive message field is
 * sensitive, and of a map only the values are.
 *
 * <p>Where Envoy shows what it cannot reify as it is, the proxy shows nothing it cannot read: it
 * forwards types and fields newer than its API, and any of them may be secret. An {@code Any} of a
 * type the proxy does not know, or whose bytes do not parse, keeps its type URL and its value
 * becomes {@value #REDACTED}; a {@code TypedStruct} of such a type keeps its type URL and loses its
 * value; fields the proxy's API does not have (unknown fields) are dropped.
 *
 * <p>A resource with nothing to redact is returned as it is, the same object; each resource body's
 * redacted copy is kept for as long as the body is (weakly, by identity: the store shares one body
 * per version), so a dump or a client status request pays the walk once per resource version.
 * Thread-safe.
 */
public final class Redaction {

  /** What a redacted string or bytes field holds: Envoy's word. */
  public static final String REDACTED = "[redacted]";

  private static final ByteString REDACTED_BYTES = ByteString.copyFromUtf8(REDACTED);

  private static final String ANY = Any.getDescriptor().getFullName();
  private static final Set<String> TYPED_STRUCTS =
      Set.of("xds.type.v3.TypedStruct", "udpa.type.v1.TypedStruct");

  /**
   * How many {@code Any} and {@code TypedStruct} may nest before the rest is opaque: each is parsed
   * anew, which protobuf's own nesting limit does not count across, and the recursion must not
   * overflow the stack on a hostile resource (DESIGN invariant 7).
   */
  private static final int MAX_OPAQUE_DEPTH = 32;

  /** Stands for "nothing to redact" in {@link #BODIES}, so no value holds its key strongly. */
  private static final Any UNCHANGED = Any.newBuilder().setTypeUrl("xds-proxy/unchanged").build();

  private static final Cache<Any, Any> BODIES = Caffeine.newBuilder().weakKeys().build();

  static {
    // An extension the descriptors do not resolve reads as false: every field would pass unseen.
    FieldDescriptor privateKey = TlsCertificate.getDescriptor().findFieldByName("private_key");
    if (!isSensitive(privateKey)) {
      throw new IllegalStateException(
          "the (udpa.annotations.sensitive) option of "
              + privateKey.getFullName()
              + " does not read from the API's descriptors: nothing could be redacted");
    }
  }

  private Redaction() {}

  /** {@code resource} with its sensitive fields redacted; itself when it has none. */
  public static Any redact(Any resource) {
    Any redacted =
        BODIES.get(
            resource,
            body -> {
              Any made = (Any) redactAny(body, false, 0);
              return made == body ? UNCHANGED : made;
            });
    return redacted == UNCHANGED ? resource : redacted;
  }

  /**
   * Whether the API marks {@code field} sensitive: udpa's annotation, which Envoy's API uses, or
   * its successor in the xds tree.
   */
  static boolean isSensitive(FieldDescriptor field) {
    return field.getOptions().getExtension(udpa.annotations.Sensitive.sensitive)
        || field.getOptions().getExtension(xds.annotations.v3.Sensitive.sensitive);
  }

  /**
   * {@code message} redacted, itself when nothing in it is; {@code sensitive} when a field above it
   * is.
   */
  private static Message redact(Message message, boolean sensitive, int depth) {
    String type = message.getDescriptorForType().getFullName();
    if (type.equals(ANY)) {
      return redactAny(message, sensitive, depth);
    }
    if (TYPED_STRUCTS.contains(type)) {
      return redactTypedStruct(message, sensitive, depth);
    }
    Message.Builder changed = null;
    if (!message.getUnknownFields().asMap().isEmpty()) {
      changed = message.toBuilder().setUnknownFields(UnknownFieldSet.getDefaultInstance());
    }
    for (Map.Entry<FieldDescriptor, Object> entry : message.getAllFields().entrySet()) {
      FieldDescriptor field = entry.getKey();
      boolean fieldSensitive = sensitive || isSensitive(field);
      Object value = entry.getValue();
      Object redacted =
          field.isMapField()
              ? redactMap(field, (List<?>) value, fieldSensitive, depth)
              : field.isRepeated()
                  ? redactList(field, (List<?>) value, fieldSensitive, depth)
                  : redactValue(field, value, fieldSensitive, depth);
      if (redacted != value) {
        if (changed == null) {
          changed = message.toBuilder();
        }
        if (redacted == null) {
          changed.clearField(field);
        } else {
          changed.setField(field, redacted);
        }
      }
    }
    return changed == null ? message : changed.build();
  }

  /** One value of {@code field}: itself when unchanged, null when it is to be cleared. */
  private static Object redactValue(
      FieldDescriptor field, Object value, boolean sensitive, int depth) {
    return switch (field.getJavaType()) {
      case MESSAGE -> redact((Message) value, sensitive, depth);
      case STRING -> sensitive ? REDACTED : value;
      case BYTE_STRING -> sensitive ? REDACTED_BYTES : value;
      default -> sensitive ? null : value;
    };
  }

  private static Object redactList(
      FieldDescriptor field, List<?> values, boolean sensitive, int depth) {
    List<Object> redacted = new ArrayList<>(values.size());
    boolean changed = false;
    for (Object value : values) {
      Object one = redactValue(field, value, sensitive, depth);
      if (one == null) {
        return null; // a sensitive number, bool or enum: the whole field is cleared
      }
      changed |= one != value;
      redacted.add(one);
    }
    return changed ? Collections.unmodifiableList(redacted) : values;
  }

  /** A map's values are redacted, its keys kept: redacted keys would collide. */
  private static Object redactMap(
      FieldDescriptor field, List<?> entries, boolean sensitive, int depth) {
    FieldDescriptor valueField = field.getMessageType().findFieldByName("value");
    List<Object> redacted = new ArrayList<>(entries.size());
    boolean changed = false;
    for (Object item : entries) {
      Message entry = (Message) item;
      Object value = entry.getField(valueField);
      Object one = redactValue(valueField, value, sensitive, depth);
      if (one != value) {
        changed = true;
        Message.Builder builder = entry.toBuilder();
        entry =
            (one == null ? builder.clearField(valueField) : builder.setField(valueField, one))
                .build();
      }
      redacted.add(entry);
    }
    return changed ? Collections.unmodifiableList(redacted) : entries;
  }

  /**
   * An {@code Any} (generated or dynamic): the message it packs, redacted and packed again; opaque
   * when the proxy cannot read it.
   */
  private static Message redactAny(Message any, boolean sensitive, int depth) {
    Descriptor descriptor = any.getDescriptorForType();
    FieldDescriptor typeUrlField = descriptor.findFieldByName("type_url");
    FieldDescriptor valueField = descriptor.findFieldByName("value");
    String typeUrl = (String) any.getField(typeUrlField);
    ByteString value = (ByteString) any.getField(valueField);
    if (typeUrl.isEmpty() && value.isEmpty()) {
      return any;
    }
    Descriptor packed = depth < MAX_OPAQUE_DEPTH ? known(typeUrl) : null;
    if (packed != null) {
      try {
        DynamicMessage message = DynamicMessage.parseFrom(packed, value);
        Message redacted = redact(message, sensitive, depth + 1);
        return redacted == message
            ? any
            : any.toBuilder().setField(valueField, redacted.toByteString()).build();
      } catch (InvalidProtocolBufferException e) {
        // Bytes that are not the type they claim are as unreadable as an unknown type.
      }
    }
    Message.Builder opaque = any.toBuilder().setField(valueField, REDACTED_BYTES);
    if (sensitive) {
      opaque.setField(typeUrlField, REDACTED);
    }
    return opaque.build();
  }

  /**
   * A {@code TypedStruct}: its JSON read as the type it names, redacted, and written back; without
   * its value when the proxy cannot read it.
   */
  private static Message redactTypedStruct(Message typedStruct, boolean sensitive, int depth) {
    Descriptor descriptor = typedStruct.getDescriptorForType();
    FieldDescriptor typeUrlField = descriptor.findFieldByName("type_url");
    FieldDescriptor valueField = descriptor.findFieldByName("value");
    String typeUrl = (String) typedStruct.getField(typeUrlField);
    Message value = (Message) typedStruct.getField(valueField);
    Descriptor type = depth < MAX_OPAQUE_DEPTH ? known(typeUrl) : null;
    if (type != null) {
      try {
        String json = JsonFormat.printer().print(Struct.parseFrom(value.toByteString()));
        DynamicMessage.Builder message = DynamicMessage.newBuilder(type);
        JsonFormat.parser().usingTypeRegistry(ApiTypes.json()).merge(json, message);
        DynamicMessage read = message.build();
        Message redacted = redact(read, sensitive, depth + 1);
        if (redacted == read) {
          return typedStruct;
        }
        Struct.Builder written = Struct.newBuilder();
        JsonFormat.parser()
            .merge(
                JsonFormat.printer().usingTypeRegistry(ApiTypes.json()).print(redacted), written);
        return typedStruct.toBuilder().setField(valueField, written.build()).build();
      } catch (InvalidProtocolBufferException | RuntimeException e) {
        // JSON that is not the type it names is as unreadable as an unknown type.
      }
    }
    boolean hidesTypeUrl = sensitive && !typeUrl.isEmpty();
    if (!typedStruct.hasField(valueField) && !hidesTypeUrl) {
      return typedStruct;
    }
    Message.Builder opaque = typedStruct.toBuilder().clearField(valueField);
    if (hidesTypeUrl) {
      opaque.setField(typeUrlField, REDACTED);
    }
    return opaque.build();
  }

  /** The API type {@code typeUrl} names, null when the proxy does not know it. */
  private static Descriptor known(String typeUrl) {
    return ApiTypes.json().find(typeUrl.substring(typeUrl.lastIndexOf('/') + 1));
  }
}
