/**
 * The bottom of DESIGN.md's data flow: the xDS server, as a library of gRPC services and handlers
 * that the application binds to its ports. ADS ({@link
 * io.xdsproxy.downstream.xds.AggregatedDiscoveryService}) and the per-type services ({@link
 * io.xdsproxy.downstream.xds.PerTypeServices}) open a {@link io.xdsproxy.downstream.xds.SotwStream}
 * or {@link io.xdsproxy.downstream.xds.DeltaStream} per call; each is a {@link
 * io.xdsproxy.downstream.xds.ClientStream} holding its node group and one type state per type
 * ({@link io.xdsproxy.downstream.xds.SotwTypeState}, {@link
 * io.xdsproxy.downstream.xds.DeltaTypeState}) that diffs the group's snapshots against what its
 * client holds. A stream's seams: {@link io.xdsproxy.downstream.xds.Admission} (the checks and
 * limits it passes, the node's sizes among them, {@link io.xdsproxy.downstream.xds.NodeLimits}),
 * {@link io.xdsproxy.downstream.xds.RequestPacer} (its request rate), {@link
 * io.xdsproxy.downstream.xds.PushScheduler} (what it writes when, under flow control) and {@link
 * io.xdsproxy.downstream.xds.StreamEvents} (its metrics and log lines). Also here: REST-JSON
 * polling, client status (CSDS, {@code /clients}; what each CSDS caller is told of, {@link
 * io.xdsproxy.downstream.xds.ClientStatusAccess}), the limits on what one client may ask, and the
 * node id check against a client's certificate.
 *
 * <p>Depends on {@code proxy-core} and gRPC (API, stubs, protobuf), never on {@code
 * upstream-client} or the application: it sees the upstream only as the node groups' snapshots and
 * {@link io.xdsproxy.core.Interest}, and gets its threads, clock, timer and limits from {@link
 * io.xdsproxy.downstream.xds.ServerContext}.
 *
 * <p>Threads: a stream's state (its type states, what it sent, what its client ACKed) is confined
 * to its own {@link io.xdsproxy.core.SerialExecutor} on the shared worker pool, in the pool's
 * initial lane until its client has answered (ACK or NACK) a first response of every type it asked
 * for, and while a type's first request waits, else in the change lane ({@link
 * io.xdsproxy.core.WorkLanes}, {@link io.xdsproxy.downstream.xds.StreamLane}). gRPC hands the
 * call's callbacks over on its connection's event loop (the server's executor is direct): a request
 * is read there and handed to the stream's executor, or, when it costs little (an ACK of an
 * established client) and the executor is idle, handled there at once; the other callbacks and the
 * group's notifications only enqueue. Snapshots are read as they are, immutable. A REST poll has an
 * executor of its own likewise. The timer only fires (a paced stream's next read, a long poll's
 * timeout) onto those executors. {@link io.xdsproxy.downstream.xds.Clients} is a concurrent
 * registry; each stream answers for its own status on its own executor.
 */
package io.xdsproxy.downstream.xds;
