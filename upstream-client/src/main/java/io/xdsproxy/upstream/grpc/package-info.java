/**
 * The top of DESIGN.md's data flow: the control plane reached over ADS. {@link
 * io.xdsproxy.upstream.grpc.AdsUpstream} is the {@link io.xdsproxy.core.UpstreamSource}: one
 * channel to the control plane, one session per node group (invariant 1), State of the World
 * ({@link io.xdsproxy.upstream.grpc.SotwUpstreamSession}) or Delta ({@link
 * io.xdsproxy.upstream.grpc.DeltaUpstreamSession}) over what both share ({@link
 * io.xdsproxy.upstream.grpc.AdsSession}: reconnect with {@link io.xdsproxy.upstream.grpc.Backoff},
 * ACK/NACK, the not-found timeout), every stream started at the rate {@link
 * io.xdsproxy.upstream.grpc.StreamStarts} allows, in turn with the other tenants' groups. Resource
 * events go to the group as {@link io.xdsproxy.core.ResourceUpdate}s; interest comes back as {@link
 * io.xdsproxy.core.Interest}. The group audit's one-shot streams ({@link
 * io.xdsproxy.upstream.grpc.AuditSession}) ask the control plane what it sends one member node,
 * beside the groups' sessions, and feed no store. The TLS files of both sides ({@link
 * io.xdsproxy.upstream.grpc.TlsFiles}) are here because the control plane's client was their first
 * user; the xDS port uses them too.
 *
 * <p>Depends on {@code proxy-core} only, never on the downstream side or the application: a session
 * knows nothing of the streams its group serves.
 *
 * <p>Threads: a session's state is confined to its own {@link io.xdsproxy.core.SerialExecutor} on
 * the shared worker pool (not its group's: the group hears of updates through its listener, which
 * enqueues on the group's executor); so is an audit's, on an executor of its own. gRPC's callbacks
 * run on that pool and only enqueue on the session's executor; reconnects are scheduled on the
 * timer and run on the session's executor. {@link io.xdsproxy.upstream.grpc.StreamStarts}, shared
 * by the sessions of one upstream, keeps its queue on an executor of its own and hands each start
 * back to its session's executor. {@link io.xdsproxy.upstream.grpc.TlsFiles} polls its files on the
 * timer, and the key and trust managers it updates are thread-safe.
 */
package io.xdsproxy.upstream.grpc;
