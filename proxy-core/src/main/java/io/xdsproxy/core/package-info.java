/**
 * The middle of DESIGN.md's data flow: what a node group knows, between the upstream that feeds it
 * and the downstream streams it serves. {@link io.xdsproxy.core.NodeGroups} puts clients into
 * groups ({@link io.xdsproxy.core.NodeGroupRule}); each {@link io.xdsproxy.core.NodeGroup} holds
 * one {@link io.xdsproxy.core.ResourceStore} (the shared cache), one upstream session (invariant 1)
 * and its streams' {@link io.xdsproxy.core.Interest}. The upstream is reached only through {@link
 * io.xdsproxy.core.UpstreamSource}, the streams only through {@link io.xdsproxy.core.GroupWatcher};
 * the type registry ({@link io.xdsproxy.core.TypeUrl}), versions, subscriptions, resource decoding
 * and the redaction of what a resource shows outside its stream ({@link
 * io.xdsproxy.core.Redaction}) live here too, and how a client's strings are cut and escaped
 * wherever they are shown ({@link io.xdsproxy.core.ClientStrings}: logs, statuses, metric labels).
 *
 * <p>Depends on no other module of the proxy, and does no networking: no gRPC transport, no
 * sockets. The upstream and downstream modules depend on it, never the other way round.
 *
 * <p>Threads: a group's store, its session handle, its watchers and their interest ({@link
 * io.xdsproxy.core.GroupInterest}, which bounds what the group asks upstream) and what it serves of
 * its saved state ({@link io.xdsproxy.core.SavedOverlay}) are confined to the group's own {@link
 * io.xdsproxy.core.SerialExecutor}, running on the shared worker pool; the group's public methods
 * only enqueue there. What the store hands out ({@link io.xdsproxy.core.TypeSnapshot}, {@link
 * io.xdsproxy.core.XdsResource}, {@link io.xdsproxy.core.Subscription}) is immutable, read by
 * streams from their own executors. {@link io.xdsproxy.core.NodeGroups} is called from any thread:
 * a concurrent map, in whose compute a stream takes a group and an idle one is found idle, so the
 * two never race. The worker pool's queue ({@link io.xdsproxy.core.WorkLanes}) is thread-safe, one
 * lock; it takes updates to the streams already served ahead of newcomers' first states. The timer
 * (one shared scheduled thread) only fires: a TTL expiry is handed to the group's executor; an idle
 * group's check runs on the timer against the map, as above. The group audit ({@link
 * io.xdsproxy.core.GroupAuditor}, comparing with {@link io.xdsproxy.core.AuditComparison}) takes
 * its turns on the timer and runs each audit on the worker pool, one at a time; it asks a group's
 * executor once for the group's members and interest and otherwise reads only snapshots.
 */
package io.xdsproxy.core;
