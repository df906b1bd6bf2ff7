package io.xdsproxy.downstream.xds;

import com.google.protobuf.Any;
import io.envoyproxy.envoy.admin.v3.ClientResourceStatus;
import io.envoyproxy.envoy.service.status.v3.ConfigStatus;
import io.xdsproxy.core.TypeUrl;
import java.time.Instant;
import java.util.Optional;

/**
 * What one client holds of one resource it subscribed to, as the proxy last told it and as the
 * client answered: one entry of its client status (CSDS, {@code envoy.service.status.v3}).
 *
 * @param version SotW: the version_info of the response the status is about; Delta: the resource's
 *     own version; empty when nothing was sent
 * @param resource the resource as the proxy last sent it, empty when nothing was
 * @param lastUpdated when the client last answered for it (ACK or NACK), or, unanswered, when it
 *     was sent; empty when neither
 * @param configStatus whether the client has answered for what the proxy last sent it
 * @param clientStatus what the client last said of it, or that the proxy told it it does not exist
 * @param rejection the client's NACK of the copy it was last sent
 */
public record ResourceStatus(
    TypeUrl type,
    String name,
    String version,
    Optional<Any> resource,
    Optional<Instant> lastUpdated,
    ConfigStatus configStatus,
    ClientResourceStatus clientStatus,
    Optional<Rejection> rejection) {

  /** A NACK: the client's error_detail message, the version it rejected, and when it said so. */
  public record Rejection(String message, String version, Instant at) {}
}
