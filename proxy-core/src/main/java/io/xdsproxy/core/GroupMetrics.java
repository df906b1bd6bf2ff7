package io.xdsproxy.core;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;

/**
 * The node groups' meters, named by Prometheus conventions once exported: open groups, the shared
 * store's resources and bytes by type (summed over groups, measured when scraped), and by type the
 * do_not_cache resources relayed and the TTLs that lapsed.
 */
final class GroupMetrics {

  private final MeterRegistry meters;
  private final NodeGroups groups;
  private final Set<TypeUrl> measuredTypes = ConcurrentHashMap.newKeySet();

  GroupMetrics(MeterRegistry meters, NodeGroups groups) {
    this.meters = meters;
    this.groups = groups;
    Gauge.builder("xds.node.groups", groups, g -> g.groups().size())
        .description("Open node groups")
        .register(meters);
    // Every known type's series exist from the start, at zero, so that an idle replica exports them
    // and a rate or an alert over them has a value before the first resource of a type.
    for (TypeUrl type : TypeUrl.known()) {
      stored(type);
      relays(type);
      expiries(type);
    }
  }

  /**
   * A group stored a snapshot of {@code type}: the store's size of that type is measured from now
   * on.
   */
  void stored(TypeUrl type) {
    if (measuredTypes.add(type)) {
      storeGauge(
          "xds.store.resources",
          "Resources held in the shared store, over all node groups",
          type,
          snapshot -> snapshot.resources().size());
      storeGauge(
          "xds.store.bytes",
          "Encoded size of the resources held in the shared store, over all node groups",
          type,
          snapshot ->
              snapshot.resources().values().stream()
                  .mapToLong(r -> r.body().getSerializedSize())
                  .sum());
    }
  }

  private void storeGauge(
      String name, String description, TypeUrl type, ToDoubleFunction<TypeSnapshot> measure) {
    Gauge.builder(
            name,
            groups,
            g ->
                g.groups().stream()
                    .mapToDouble(group -> measure.applyAsDouble(group.snapshot(type)))
                    .sum())
        .description(description)
        .tag("type", type.shortName())
        .register(meters);
  }

  /**
   * {@code count} resources marked do_not_cache came from the upstream and were passed on to the
   * streams.
   */
  void relayedUncacheable(TypeUrl type, int count) {
    relays(type).increment(count);
  }

  private Counter relays(TypeUrl type) {
    return counter(
        "xds.do.not.cache.relays",
        "Resources marked do_not_cache relayed from the upstream to the streams",
        type);
  }

  /** A resource's TTL lapsed without a heartbeat and it left the store. */
  void expired(TypeUrl type) {
    expiries(type).increment();
  }

  private Counter expiries(TypeUrl type) {
    return counter(
        "xds.ttl.expiries", "Resources removed because their TTL lapsed without a heartbeat", type);
  }

  private Counter counter(String name, String description, TypeUrl type) {
    return Counter.builder(name)
        .description(description)
        .tag("type", type.shortName())
        .register(meters);
  }
}
