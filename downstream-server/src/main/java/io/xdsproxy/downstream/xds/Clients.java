package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.xdsproxy.core.NodeGroup;
import io.xdsproxy.core.VerifiedIdentity;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The open downstream streams, for {@code GET /clients} and client status (CSDS): each tells its
 * own status on its own executor, so the admin thread never reads a stream's state while the stream
 * changes it.
 */
public final class Clients {

  /** What one stream reports: who, where, and per type what it asked for and what it said. */
  public record ClientStatus(
      String nodeId, String group, String variant, String peer, List<TypeStatus> types) {}

  /**
   * One type of a stream: its subscription, the version it last ACKed, and its last NACK.
   *
   * @param lastNack the error_detail message of the client's last NACK, if any
   */
  public record TypeStatus(
      String typeUrl,
      boolean wildcard,
      List<String> names,
      String ackedVersion,
      Optional<String> lastNack) {}

  /**
   * What one stream's client holds, for client status (CSDS): its node, each resource it subscribed
   * to, the group it is served from, which knows what of it is still from disk, and what its
   * connection proved, which decides who may be told.
   */
  public record ClientResources(
      Node node, List<ResourceStatus> resources, NodeGroup group, VerifiedIdentity identity) {}

  private final Set<ClientStream<?, ?>> streams = ConcurrentHashMap.newKeySet();

  /** Open streams by node id; a node id with none is not kept. */
  private final Map<String, Integer> byNode = new ConcurrentHashMap<>();

  /**
   * Counts a stream of {@code nodeId} in, unless that node id has {@code max} streams open already;
   * returns whether it was. Each admitted stream is {@linkplain #dismiss dismissed} when it ends.
   */
  boolean admit(String nodeId, int max) {
    boolean[] admitted = {false};
    byNode.compute(
        nodeId,
        (id, open) -> {
          int count = open == null ? 0 : open;
          admitted[0] = count < max;
          return admitted[0] ? count + 1 : open;
        });
    return admitted[0];
  }

  void dismiss(String nodeId) {
    byNode.computeIfPresent(nodeId, (id, open) -> open > 1 ? open - 1 : null);
  }

  void opened(ClientStream<?, ?> stream) {
    streams.add(stream);
  }

  void closed(ClientStream<?, ?> stream) {
    streams.remove(stream);
  }

  /**
   * Ends every open stream with {@code status}, so that its client reconnects (to another replica).
   */
  public void endAll(io.grpc.Status status) {
    streams.forEach(stream -> stream.shutDown(status));
  }

  /** The status of every open stream; a stream too busy to answer within a second is left out. */
  public List<ClientStatus> statuses() {
    List<CompletableFuture<ClientStatus>> asked = streams.stream().map(Clients::status).toList();
    return asked.stream()
        .map(future -> future.completeOnTimeout(null, 1, TimeUnit.SECONDS).join())
        .filter(java.util.Objects::nonNull)
        .sorted(java.util.Comparator.comparing(ClientStatus::nodeId))
        .toList();
  }

  /**
   * What every open stream's client holds, without blocking the caller: a stream too busy to answer
   * within a second is left out.
   */
  public CompletableFuture<List<ClientResources>> resources() {
    List<CompletableFuture<ClientResources>> asked =
        streams.stream()
            .map(stream -> resources(stream).completeOnTimeout(null, 1, TimeUnit.SECONDS))
            .toList();
    return CompletableFuture.allOf(asked.toArray(CompletableFuture[]::new))
        .thenApply(
            done ->
                asked.stream()
                    .map(CompletableFuture::join)
                    .filter(java.util.Objects::nonNull)
                    .sorted(
                        java.util.Comparator.comparing(
                            (ClientResources client) -> client.node().getId()))
                    .toList());
  }

  /** What {@code stream} reports of itself, told on its executor. */
  private static CompletableFuture<ClientStatus> status(ClientStream<?, ?> stream) {
    return stream.report(
        states ->
            new ClientStatus(
                stream.nodeId(),
                stream.group().key().value(),
                stream.variant(),
                stream.peer().toString(),
                states.stream()
                    .map(
                        state ->
                            new TypeStatus(
                                state.type().url(),
                                state.subscription().wildcard(),
                                state.subscription().names().stream().sorted().toList(),
                                state.ackedVersion(),
                                state.lastNackMessage()))
                    .toList()));
  }

  /** What {@code stream}'s client holds of each resource it subscribed to, told on its executor. */
  private static CompletableFuture<ClientResources> resources(ClientStream<?, ?> stream) {
    return stream.report(
        states ->
            new ClientResources(
                stream.node(),
                states.stream().flatMap(state -> state.resourceStatuses().stream()).toList(),
                stream.group(),
                stream.member().identity()));
  }
}
