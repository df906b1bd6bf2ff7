package io.xdsproxy.core;

import java.util.ArrayList;
import java.util.List;
import org.slf4j.event.KeyValuePair;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * What a log line of a stream or an upstream session is about, as SLF4J 2 key-value pairs beside
 * its message: the {@code node} id, the node {@code group}, the resource {@code type} and the
 * {@code peer} (the client's address downstream, the control plane's upstream). A JSON log line
 * carries each as a field an operator can search by; a text line shows them as {@code key=value}
 * after the message. The same names on every line, whichever class logs it, is what makes them
 * searchable: they are only set through this class. A node id and a group key are a client's
 * strings: each is cut to {@link ClientStrings#SHOWN} characters here, so that no client's node
 * makes a line long (the log encoders escape what could break one). Immutable.
 *
 * @param pairs the fields, in the order they were added
 */
public record LogFields(List<KeyValuePair> pairs) {

  /** No fields: the start of every set of them. */
  public static final LogFields NONE = new LogFields(List.of());

  public LogFields {
    pairs = List.copyOf(pairs);
  }

  /** With the client's (downstream) or the upstream session's (upstream) node id. */
  public LogFields node(String id) {
    return with("node", ClientStrings.bounded(id));
  }

  public LogFields group(NodeGroupKey key) {
    return with("group", key == null ? null : key.toString());
  }

  /** With the resource type, by the short name metrics label it with. */
  public LogFields type(TypeUrl type) {
    return with("type", type == null ? null : type.shortName());
  }

  /** With the other end: a client's address, or the control plane's target. */
  public LogFields peer(Object peer) {
    return with("peer", peer == null ? null : peer.toString());
  }

  /** Adds these fields to {@code event}, and returns it. */
  public LoggingEventBuilder addTo(LoggingEventBuilder event) {
    for (KeyValuePair pair : pairs) {
      event.addKeyValue(pair.key, pair.value);
    }
    return event;
  }

  /** A field not known (null) is left out rather than logged as "null". */
  private LogFields with(String key, String value) {
    if (value == null) {
      return this;
    }
    List<KeyValuePair> more = new ArrayList<>(pairs);
    more.add(new KeyValuePair(key, value));
    return new LogFields(more);
  }
}
