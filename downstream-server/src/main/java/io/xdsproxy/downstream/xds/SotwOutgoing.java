package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.XdsResource;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A SotW response ready to send ({@link SotwTypeState}): its resources, the heartbeats it carries,
 * its version_info, the snapshot it was built from, whether it still holds resources that snapshot
 * has removed (make-before-break), what it left out as do_not_cache, whether it is the type's whole
 * state, and the position of the streams that owe it alike, if it is shared.
 */
record SotwOutgoing(
    List<XdsResource> included,
    List<XdsResource> heartbeats,
    String version,
    TypeSnapshot snapshot,
    boolean removalsDeferred,
    Set<String> withheld,
    boolean whole,
    Optional<ResponsePosition> sharedAt)
    implements TypeState.Outgoing<SotwOutgoing> {

  SotwOutgoing {
    withheld =
        withheld.isEmpty() ? Set.of() : withheld; // streams keep it: an empty one costs nothing
  }

  /**
   * Resources chosen by name, at the version of the state they come from: not the whole state, no
   * removal deferred.
   */
  static SotwOutgoing named(
      List<XdsResource> included,
      List<XdsResource> heartbeats,
      TypeSnapshot snapshot,
      Set<String> withheld) {
    return new SotwOutgoing(
        included,
        heartbeats,
        snapshot.version(),
        snapshot,
        false,
        withheld,
        false,
        Optional.empty());
  }

  @Override
  public SotwOutgoing sharedAt(ResponsePosition position) {
    return new SotwOutgoing(
        included,
        heartbeats,
        version,
        snapshot,
        removalsDeferred,
        withheld,
        whole,
        Optional.of(position));
  }

  @Override
  public int entries() {
    return included.size() + heartbeats.size();
  }
}
