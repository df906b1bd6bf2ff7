package io.xdsproxy.app;

import io.micrometer.core.instrument.MeterRegistry;
import io.xdsproxy.core.GroupAuditor;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.Ticker;
import io.xdsproxy.core.UpstreamSource;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The group audit of a proxy, as its configuration asks (README, "Group audit"). */
final class Audits {

  private static final Logger log = LoggerFactory.getLogger(XdsProxy.class);

  /** The least time between the starts of two group audits, over all groups. */
  static final Duration AUDIT_MIN_GAP = Duration.ofSeconds(1);

  /**
   * How long one audit's session may take beyond the not-found timeout, which bounds its wait for
   * answers: connecting, and closing.
   */
  static final Duration AUDIT_SLACK = Duration.ofSeconds(10);

  private Audits() {}

  /**
   * The group audit, if {@code --group-audit-interval} asks for it and the upstream is a control
   * plane: a directory serves every node the same files, so no group of it can mix configurations.
   */
  static Optional<GroupAuditor> auditor(
      ProxyConfig config,
      UpstreamSource upstream,
      NodeGroups groups,
      ThreadPoolExecutor pool,
      ScheduledExecutorService timer,
      MeterRegistry meters) {
    if (config.groupAuditInterval().isEmpty()) {
      return Optional.empty();
    }
    if (!upstream.auditable()) {
      log.warn(
          "--group-audit-interval is ignored: {} serves every node the same resources, so no group"
              + " can mix nodes entitled to different configuration",
          upstream.describe());
      return Optional.empty();
    }
    Duration interval = config.groupAuditInterval().get();
    log.info(
        "node groups are audited every {}: a member other than the upstream node is asked about at {}",
        interval,
        upstream.describe());
    return Optional.of(
        new GroupAuditor(
                groups,
                upstream,
                pool,
                timer,
                Ticker.SYSTEM,
                Clock.systemUTC(),
                interval,
                AUDIT_MIN_GAP,
                config.notFoundTimeout().plus(AUDIT_SLACK),
                meters)
            .start());
  }
}
