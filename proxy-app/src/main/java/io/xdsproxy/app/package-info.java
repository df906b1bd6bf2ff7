/**
 * The application: the modules of DESIGN.md's data flow put together and bound to ports. {@link
 * io.xdsproxy.app.Main} reads the flags ({@link io.xdsproxy.app.ProxyConfig}, one table in {@code
 * Flags}) and starts an {@link io.xdsproxy.app.XdsProxy}, which builds the upstream source (control
 * plane or resources directory), the node groups and the xDS server, and the HTTP listeners ({@code
 * AdminServer}): monitoring (health, readiness, metrics), admin ({@code /config_dump}, {@code
 * /clients}, {@code /logging}) and REST-JSON xDS. Also here: the xDS port's TLS, shared by the gRPC
 * and REST-JSON listeners; the xDS port's transport ({@code XdsTransport}: its event loops, and the
 * limits on connections and stream resets that a peer meets before any xDS is read); and the
 * build's version.
 *
 * <p>The only package that depends on all of {@code proxy-core}, {@code upstream-client} and {@code
 * downstream-server}; nothing of theirs depends on it. Protocol logic does not belong here: what
 * this package adds is wiring, configuration and operator-facing endpoints.
 *
 * <p>Threads: {@link io.xdsproxy.app.XdsProxy} owns the executors every module is given: the worker
 * pool (on which every node group's, upstream session's and stream's {@link
 * io.xdsproxy.core.SerialExecutor} runs, its queue in two lanes: {@link
 * io.xdsproxy.core.WorkLanes}) and the one timer thread; it shuts them down on close. The HTTP
 * listeners (the JDK's server) run their handlers on the worker pool; a handler reads the groups'
 * immutable snapshots, or asks streams through their executors, never their state. A signal starts
 * the drain on a thread of its own. The xDS port's connections are accepted on one thread, which
 * admits or refuses each ({@code LimitedServerChannel}), and run on its event loops.
 */
package io.xdsproxy.app;
