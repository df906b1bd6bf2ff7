/**
 * The top of DESIGN.md's data flow when there is no control plane: a directory of DiscoveryResponse
 * files ({@link io.xdsproxy.upstream.fs.ResponseFile}) served as the upstream ({@link
 * io.xdsproxy.upstream.fs.FileSystemSource}, the spec's "Filesystem subscriptions"). Every node
 * group gets the same resources, as {@link io.xdsproxy.core.ResourceUpdate}s of whole types.
 *
 * <p>Depends on {@code proxy-core} only; no gRPC and no network.
 *
 * <p>Threads: all of the source's state is confined to its one thread of its own (the watcher, the
 * periodic rescan, the parsed files); it tells groups through their listeners, which enqueue on
 * each group's executor. The state directory ({@link io.xdsproxy.upstream.fs.StateDir}, {@code
 * --state-dir}) uses the same file format to keep each node group's last good state across
 * restarts: it is read on a group's executor when the group opens, and written on one thread of its
 * own.
 */
package io.xdsproxy.upstream.fs;
