package io.xdsproxy.downstream.xds;

import static io.envoyproxy.envoy.admin.v3.ClientResourceStatus.ACKED;
import static io.envoyproxy.envoy.admin.v3.ClientResourceStatus.DOES_NOT_EXIST;
import static io.envoyproxy.envoy.admin.v3.ClientResourceStatus.NACKED;
import static io.envoyproxy.envoy.admin.v3.ClientResourceStatus.REQUESTED;
import static io.envoyproxy.envoy.service.status.v3.ConfigStatus.ERROR;
import static io.envoyproxy.envoy.service.status.v3.ConfigStatus.NOT_SENT;
import static io.envoyproxy.envoy.service.status.v3.ConfigStatus.STALE;
import static io.envoyproxy.envoy.service.status.v3.ConfigStatus.SYNCED;

import io.xdsproxy.core.Subscription;
import io.xdsproxy.core.TypeSnapshot;
import io.xdsproxy.core.TypeSnapshot.NameState;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import java.time.Clock;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * For client status (CSDS): what one type's logical stream delivered and what the client said of
 * it. Kept in constant space whatever the number of resources, as the rest of a stream's state is:
 * the latest response, the latest one the client ACKed and the latest one it NACKed, each as the
 * snapshot and subscription it was built from. A resource the client holds is ACKed when it is, by
 * identity, the one in the snapshot of a response the client ACKed, and NACKed when it came in the
 * response the client NACKed.
 */
final class DeliveryStatus {

  /**
   * One response: its version, the snapshot it brought the client to, the subscription it answered,
   * the names it left out as do_not_cache, and when it was sent (epoch milliseconds: a stream keeps
   * a few of these per type, and an Instant would be an object each).
   */
  private record Delivery(
      String version, TypeSnapshot snapshot, Subscription scope, Set<String> withheld, long at) {

    /** The resource this response left the client holding for {@code name}, or null. */
    XdsResource held(String name) {
      return scope.covers(name) && !withheld.contains(name) ? snapshot.resolve(name) : null;
    }

    boolean toldAbsent(String name) {
      return scope.covers(name) && snapshot.state(name) == NameState.ABSENT;
    }
  }

  /**
   * The client's answer to a delivery, and when it came (epoch milliseconds): {@code seq} orders
   * answers; a NACK has its error_detail message and the delivery the client had ACKed before it.
   */
  private record Answer(
      Delivery delivery, long at, long seq, String nackMessage, Delivery ackedBefore) {}

  /**
   * What the stream reports on: the latest response, the client's last ACK and its last NACK. Made
   * for each report from the fields below.
   */
  private record Report(Delivery latest, Answer acked, Answer rejected) {}

  private final Clock clock;

  /** Each response carries every resource the client holds (SotW Listener and Cluster). */
  private final boolean fullState;

  /**
   * The client can be told a resource does not exist: full-state SotW and Delta, not SotW's other
   * types.
   */
  private final boolean tellsAbsence;

  /** Delta versions each resource; SotW versions only whole responses. */
  private final boolean perResourceVersions;

  private long answers;

  // The latest response and the one the client last ACKed, as a Delivery's fields, kept in place:
  // a stream records one of each per update, and objects made for them would be copied by every
  // young collection and referenced from this old one (issue 18, round five). A null snapshot:
  // none.
  private String sentVersion;
  private TypeSnapshot sentSnapshot;
  private Subscription sentScope;
  private Set<String> sentWithheld;
  private long sentAt;

  /**
   * The client's last ACK was of the latest response: the acked fields are the sent ones, copied
   * only when the next response is recorded, so that an ACK stores no reference.
   */
  private boolean ackedLatest;

  private String ackedVersion;
  private TypeSnapshot ackedSnapshot;
  private Subscription ackedScope;
  private Set<String> ackedWithheld;
  private long ackedSentAt;
  private long ackedAt;
  private long ackedSeq;

  /** The client's last NACK, rare enough to be an object: null if none. */
  private Answer rejected;

  private DeliveryStatus(
      Clock clock, boolean fullState, boolean tellsAbsence, boolean perResourceVersions) {
    this.clock = clock;
    this.fullState = fullState;
    this.tellsAbsence = tellsAbsence;
    this.perResourceVersions = perResourceVersions;
  }

  static DeliveryStatus sotw(TypeUrl type, Clock clock) {
    return new DeliveryStatus(clock, type.isFullStateInSotw(), type.isFullStateInSotw(), false);
  }

  static DeliveryStatus delta(Clock clock) {
    return new DeliveryStatus(clock, false, true, true);
  }

  /**
   * A response was sent; {@code version} is its version_info (SotW) or system_version_info (Delta).
   */
  void sent(String version, TypeSnapshot snapshot, Subscription scope, Set<String> withheld) {
    if (ackedLatest) {
      ackedVersion = sentVersion;
      ackedSnapshot = sentSnapshot;
      ackedScope = sentScope;
      ackedWithheld = sentWithheld;
      ackedSentAt = sentAt;
      ackedLatest = false;
    }
    sentVersion = version;
    sentSnapshot = snapshot;
    sentScope = scope;
    sentWithheld = withheld;
    sentAt = clock.millis();
  }

  /** The client ACKed the latest response. */
  void acked() {
    if (sentSnapshot != null) {
      ackedLatest = true;
      ackedAt = clock.millis();
      ackedSeq = ++answers;
    }
  }

  /** The client NACKed the latest response with {@code message}. */
  void nacked(String message) {
    Delivery latest = latestDelivery();
    if (latest != null) {
      Answer acked = lastAck();
      rejected =
          new Answer(
              latest, clock.millis(), ++answers, message, acked == null ? null : acked.delivery());
    }
  }

  private Delivery latestDelivery() {
    return sentSnapshot == null
        ? null
        : new Delivery(sentVersion, sentSnapshot, sentScope, sentWithheld, sentAt);
  }

  private Answer lastAck() {
    if (ackedLatest) {
      return new Answer(latestDelivery(), ackedAt, ackedSeq, null, null);
    }
    return ackedSnapshot == null
        ? null
        : new Answer(
            new Delivery(ackedVersion, ackedSnapshot, ackedScope, ackedWithheld, ackedSentAt),
            ackedAt,
            ackedSeq,
            null,
            null);
  }

  /**
   * The status of every resource of {@code type} in {@code subscription}, by name: each name it
   * names, and with a wildcard every resource the group has or the client was sent.
   */
  List<ResourceStatus> statuses(TypeUrl type, Subscription subscription, TypeSnapshot current) {
    Report report = new Report(latestDelivery(), lastAck(), rejected);
    SortedSet<String> names = new TreeSet<>(subscription.names());
    if (subscription.wildcard()) {
      names.addAll(current.resources().keySet());
      if (report.latest() != null) {
        names.addAll(report.latest().snapshot().resources().keySet());
      }
    }
    return names.stream().map(name -> status(report, type, name)).toList();
  }

  private ResourceStatus status(Report report, TypeUrl type, String name) {
    Delivery latest = report.latest();
    Answer acked = report.acked();
    XdsResource held = latest == null ? null : latest.held(name);
    if (held != null) {
      return heldStatus(report, type, name, held);
    }
    if (tellsAbsence && latest != null && latest.toldAbsent(name)) {
      // "Knowing When a Requested Resource Does Not Exist": the proxy told the client so.
      boolean ackedAbsent = acked != null && acked.delivery().toldAbsent(name);
      return new ResourceStatus(
          type,
          name,
          perResourceVersions ? "" : latest.version(),
          Optional.empty(),
          Optional.of(instant(ackedAbsent ? acked.at() : latest.at())),
          ackedAbsent ? SYNCED : STALE,
          DOES_NOT_EXIST,
          Optional.empty());
    }
    return new ResourceStatus(
        type, name, "", Optional.empty(), Optional.empty(), NOT_SENT, REQUESTED, Optional.empty());
  }

  private ResourceStatus heldStatus(Report report, TypeUrl type, String name, XdsResource held) {
    Delivery latest = report.latest();
    Answer acked = report.acked();
    Answer rejected = report.rejected();
    boolean ackedHolds = acked != null && acked.delivery().held(name) == held;
    // Held in the NACKed response but not in the one ACKed before it: it came in the NACKed one.
    boolean rejectedHolds =
        rejected != null
            && rejected.delivery().held(name) == held
            && (rejected.ackedBefore() == null || rejected.ackedBefore().held(name) != held);
    // A later full-state response carries it again, so an ACK of that one accepts it.
    if (rejectedHolds && !(ackedHolds && fullState && acked.seq() > rejected.seq())) {
      String version = version(rejected.delivery(), held);
      return new ResourceStatus(
          type,
          name,
          version,
          Optional.of(held.body()),
          Optional.of(instant(rejected.at())),
          ERROR,
          NACKED,
          Optional.of(
              new ResourceStatus.Rejection(
                  rejected.nackMessage(), version, instant(rejected.at()))));
    }
    if (ackedHolds) {
      return new ResourceStatus(
          type,
          name,
          version(acked.delivery(), held),
          Optional.of(held.body()),
          Optional.of(instant(acked.at())),
          SYNCED,
          ACKED,
          Optional.empty());
    }
    // Sent and not answered yet: the client's status is what it last said of the name.
    boolean ackedEarlier = acked != null && acked.delivery().held(name) != null;
    return new ResourceStatus(
        type,
        name,
        version(latest, held),
        Optional.of(held.body()),
        Optional.of(instant(latest.at())),
        STALE,
        ackedEarlier ? ACKED : REQUESTED,
        Optional.empty());
  }

  private static Instant instant(long epochMillis) {
    return Instant.ofEpochMilli(epochMillis);
  }

  private String version(Delivery delivery, XdsResource held) {
    return perResourceVersions ? held.version() : delivery.version();
  }
}
