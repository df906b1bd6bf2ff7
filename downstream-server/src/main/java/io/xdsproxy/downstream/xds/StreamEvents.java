package io.xdsproxy.downstream.xds;

import io.grpc.Status;
import io.xdsproxy.core.TypeUrl;

/**
 * What happens on a downstream stream that an operator counts or reads about: the one seam for a
 * stream's metrics and log lines (as java-control-plane's {@code DiscoveryServerCallbacks}), so the
 * protocol code says what happened and not how it is counted or logged. Called on the stream's
 * executor; {@code stream} tells who it happened to (its node, group, peer and variant, as far as
 * known). {@link MeteredStreamEvents} counts in {@link StreamMetrics} and logs.
 */
interface StreamEvents {

  /** The stream named its node and joined the node's group. */
  void opened(ClientStream<?, ?> stream);

  /**
   * The stream, once opened, ended: {@code why} it was closed (by the client, cancelled), or null
   * when it failed, told by {@link #failed} already.
   */
  void closed(ClientStream<?, ?> stream, String why);

  /**
   * A request for {@code type} came, which {@code reply} ACKs or NACKs the latest response, or
   * neither.
   */
  void request(ClientStream<?, ?> stream, TypeUrl type, Reply reply);

  /**
   * A SotW request named a response that is no longer the latest, so is ignored ("Requests become
   * stale").
   */
  void stale(ClientStream<?, ?> stream, TypeUrl type, String nonce);

  /** The client NACKed the response {@code nonce} of {@code type}, saying {@code message}. */
  void nacked(ClientStream<?, ?> stream, TypeUrl type, String nonce, String message);

  /** A response of {@code bytes} encoded bytes is written. */
  void responseSent(ClientStream<?, ?> stream, TypeUrl type, int bytes);

  /**
   * The response written carried an update that reached the proxy at {@code receivedAt} ({@link
   * io.xdsproxy.core.TypeSnapshot#changedAt}): the fan-out latency.
   */
  void fannedOut(ClientStream<?, ?> stream, TypeUrl type, long receivedAt);

  /**
   * The stream is ended for going past the limit {@code limit}, one of {@link
   * StreamMetrics#LIMITS}, as {@code why} says.
   */
  void refused(ClientStream<?, ?> stream, String limit, String why);

  /** The stream is ended because its node cannot be placed in a group, as {@code why} says. */
  void ungroupable(ClientStream<?, ?> stream, String why);

  /**
   * The stream was refused for what its client's identity does not entitle it to, {@code reason}
   * one of {@link StreamMetrics#DENIALS}.
   */
  void denied(ClientStream<?, ?> stream, String reason, String why);

  /**
   * The stream's requests come faster than {@code rate} a second: it is read at that rate from now
   * on.
   */
  void paced(ClientStream<?, ?> stream, int rate);

  /** The proxy ends the stream with {@code status}. */
  void failed(ClientStream<?, ?> stream, Status status);

  /** Serving the stream threw {@code e}: a bug; the stream is ended with INTERNAL. */
  void crashed(ClientStream<?, ?> stream, RuntimeException e);
}
