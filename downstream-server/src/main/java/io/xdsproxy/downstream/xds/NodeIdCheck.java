package io.xdsproxy.downstream.xds;

import java.util.Optional;

/** Whether the client of one call may be the node it names; see {@link NodeIdPattern}. */
@FunctionalInterface
interface NodeIdCheck {

  NodeIdCheck ANY = nodeId -> Optional.empty();

  /** Empty when the client may be node {@code nodeId}; else why not, for the client and the log. */
  Optional<String> refusal(String nodeId);
}
