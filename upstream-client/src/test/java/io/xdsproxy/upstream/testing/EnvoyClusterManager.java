package io.xdsproxy.upstream.testing;

import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.testing.EnvoyLikeClient.ClusterWarming;
import io.xdsproxy.upstream.testing.EnvoyLikeClient.WarmCause;
import io.xdsproxy.upstream.testing.EnvoyMux.DecodedResource;
import io.xdsproxy.upstream.testing.EnvoyMux.FailureReason;
import io.xdsproxy.upstream.testing.EnvoyMux.RejectedUpdate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The model of Envoy's cluster manager as far as xDS sees it: {@code ClusterManagerImpl} and its
 * {@code ClusterManagerInitHelper} (source/common/upstream/cluster_manager_impl.cc), CDS ({@code
 * CdsApiImpl}, {@code CdsApiHelper}) and EDS clusters ({@code EdsClusterImpl},
 * source/extensions/clusters/eds/eds.cc). A cluster added or changed by CDS is <em>warming</em>
 * until its EDS subscription completes; then it replaces the active one. Confined to the client's
 * main thread.
 */
final class EnvoyClusterManager {

  /** Runs a task on the main thread after a delay; the returned action cancels it. */
  interface Timers {
    Runnable schedule(Duration delay, Runnable task);
  }

  /** {@code ClusterManagerInitHelper::State}. */
  enum InitState {
    LOADING,
    WAITING_FOR_PRIMARY,
    WAITING_TO_START_SECONDARY,
    WAITING_TO_START_CDS,
    CDS_INITIALIZED,
    ALL_CLUSTERS_INITIALIZED
  }

  private final EnvoyMux mux;
  private final List<Cluster> bootstrapClusters;
  private final Duration initialFetchTimeout;
  private final EnvoySotwMux.EdsCache edsCache;
  private final Timers timers;
  private final Supplier<Instant> clock;
  private final Consumer<String> log;
  private final Consumer<ClusterWarming> warmed;
  private final Runnable allClustersInitialized;

  private final Map<String, ClusterEntry> activeClusters = new LinkedHashMap<>();
  private final Map<String, ClusterEntry> warmingClusters = new LinkedHashMap<>();
  private final Map<String, ClusterEntry> primaryInitClusters = new LinkedHashMap<>();

  /**
   * Insertion order stands in for the iteration order of Envoy's hash map here, which cannot be
   * reproduced.
   */
  private final Map<String, ClusterEntry> secondaryInitClusters = new LinkedHashMap<>();

  private boolean startedSecondaryInitialize;
  private InitState state = InitState.LOADING;
  private EnvoyMux.Resume resumeCds;
  private boolean cdsInitializeCallbackPending;

  EnvoyClusterManager(
      EnvoyMux mux,
      List<Cluster> bootstrapClusters,
      Duration initialFetchTimeout,
      EnvoySotwMux.EdsCache edsCache,
      Timers timers,
      Supplier<Instant> clock,
      Consumer<String> log,
      Consumer<ClusterWarming> warmed,
      Runnable allClustersInitialized) {
    this.mux = mux;
    this.bootstrapClusters = bootstrapClusters;
    this.initialFetchTimeout = initialFetchTimeout;
    this.edsCache = edsCache;
    this.timers = timers;
    this.clock = clock;
    this.log = log;
    this.warmed = warmed;
    this.allClustersInitialized = allClustersInitialized;
  }

  /**
   * The constructor of {@code ClusterManagerImpl} and the server's start-up: bootstrap clusters are
   * loaded active and initialized by the init helper (an EDS one is secondary: its EDS request goes
   * out first); CDS starts only once they are initialized ({@code maybeFinishInitialize}), so EDS
   * precedes CDS in the mux's subscription order when the bootstrap has EDS clusters.
   */
  void start() {
    for (Cluster cluster : bootstrapClusters) {
      activeClusters.put(cluster.getName(), new ClusterEntry(cluster, false));
    }
    updateClusterCounts();
    List.copyOf(activeClusters.values()).forEach(this::initHelperAddCluster);
    state = InitState.WAITING_FOR_PRIMARY;
    maybeFinishInitialize();
  }

  Map<String, Cluster> activeClusters() {
    Map<String, Cluster> clusters = new LinkedHashMap<>();
    activeClusters.forEach((name, entry) -> clusters.put(name, entry.config));
    return clusters;
  }

  Map<String, Cluster> warmingClusters() {
    Map<String, Cluster> clusters = new LinkedHashMap<>();
    warmingClusters.forEach((name, entry) -> clusters.put(name, entry.config));
    return clusters;
  }

  /** The assignment each active cluster uses; a cluster that warmed without one has none. */
  Map<String, ClusterLoadAssignment> activeAssignments() {
    Map<String, ClusterLoadAssignment> assignments = new LinkedHashMap<>();
    activeClusters.forEach(
        (name, entry) -> {
          if (entry.assignment != null) {
            assignments.put(name, entry.assignment);
          }
        });
    return assignments;
  }

  // ClusterManagerInitHelper

  /**
   * {@code ClusterManagerInitHelper::addCluster}: a primary cluster starts now, a secondary (EDS)
   * one once secondary init has begun.
   */
  private void initHelperAddCluster(ClusterEntry entry) {
    Runnable onInit = () -> initHelperOnClusterInit(entry);
    if (!entry.isEds()) {
      primaryInitClusters.put(entry.name(), entry);
      entry.initialize(onInit);
    } else {
      secondaryInitClusters.put(entry.name(), entry);
      if (startedSecondaryInitialize) {
        entry.initialize(onInit);
      }
    }
  }

  private void initHelperOnClusterInit(ClusterEntry entry) {
    onClusterInit(entry);
    initHelperRemoveCluster(entry);
  }

  private void initHelperRemoveCluster(ClusterEntry entry) {
    if (state == InitState.ALL_CLUSTERS_INITIALIZED) {
      return;
    }
    Map<String, ClusterEntry> map = entry.isEds() ? secondaryInitClusters : primaryInitClusters;
    if (map.get(entry.name()) == entry) {
      map.remove(entry.name());
    }
    maybeFinishInitialize();
  }

  /**
   * {@code ClusterManagerInitHelper::maybeFinishInitialize}: primaries first; then the secondaries
   * are initialized together with EDS paused, so their names go out in one request; then CDS; and
   * once everything is initialized, the callback that lets the server start LDS.
   */
  private void maybeFinishInitialize() {
    if (state == InitState.LOADING || state == InitState.WAITING_TO_START_CDS) {
      return;
    }
    if (!primaryInitClusters.isEmpty()) {
      return;
    }
    if (state == InitState.WAITING_FOR_PRIMARY) {
      // The primary-clusters callback: the server (no RTDS here) goes straight on to
      // initializeSecondaryClusters, which re-enters this function (InstanceImpl::onRuntimeReady).
      state = InitState.WAITING_TO_START_SECONDARY;
      maybeFinishInitialize();
      return;
    }
    if (!secondaryInitClusters.isEmpty()) {
      if (!startedSecondaryInitialize) {
        EnvoyMux.Resume resumeEds = mux.pause(TypeUrl.ENDPOINT);
        startedSecondaryInitialize = true;
        for (ClusterEntry entry : List.copyOf(secondaryInitClusters.values())) {
          entry.initialize(() -> initHelperOnClusterInit(entry));
        }
        resumeEds.run();
      }
      return;
    }
    startedSecondaryInitialize = false;
    if (state == InitState.WAITING_TO_START_SECONDARY) {
      state = InitState.WAITING_TO_START_CDS;
      cdsInitialize();
    } else {
      state = InitState.ALL_CLUSTERS_INITIALIZED;
      log.accept("cm init: all clusters initialized");
      allClustersInitialized.run();
    }
  }

  // ClusterManagerImpl

  /**
   * {@code ClusterManagerImpl::onClusterInit}: a warming cluster that finished becomes the active
   * one ({@code clusterWarmingToActive}), and the one it replaces goes, with its EDS watch. A
   * bootstrap cluster is active from the start and only finishes initializing here.
   */
  private void onClusterInit(ClusterEntry entry) {
    if (warmingClusters.get(entry.name()) == entry) {
      ClusterEntry previous =
          activeClusters.put(entry.name(), warmingClusters.remove(entry.name()));
      recordWarm(entry);
      if (previous != null) {
        previous.destroy();
      }
      updateClusterCounts();
    } else if (activeClusters.get(entry.name()) == entry) {
      recordWarm(entry);
    }
  }

  private void recordWarm(ClusterEntry entry) {
    int hosts = entry.assignment == null ? 0 : hostCount(entry.assignment);
    log.accept(
        "cluster " + entry.name() + " warm by " + entry.warmCause + " with " + hosts + " host(s)");
    warmed.accept(
        new ClusterWarming(entry.name(), entry.warmingSince, clock.get(), entry.warmCause, hosts));
  }

  /**
   * {@code ClusterManagerImpl::addOrUpdateCluster}: a Cluster equal to the warming one of its name,
   * or (none warming) to the active one, is skipped (the hash of the message; bootstrap clusters
   * never change). Otherwise it becomes the warming cluster of its name, replacing a warming one,
   * and starts initializing at once after init, or through the init helper before.
   */
  private boolean addOrUpdateCluster(Cluster cluster) {
    ClusterEntry active = activeClusters.get(cluster.getName());
    ClusterEntry warming = warmingClusters.get(cluster.getName());
    if (warming != null) {
      if (warming.blocksUpdate(cluster)) {
        return false;
      }
    } else if (active != null && active.blocksUpdate(cluster)) {
      return false;
    }
    if (active != null) {
      initHelperRemoveCluster(active);
    }
    ClusterEntry entry = new ClusterEntry(cluster, true);
    ClusterEntry previous = warmingClusters.put(cluster.getName(), entry);
    updateClusterCounts();
    if (state != InitState.ALL_CLUSTERS_INITIALIZED) {
      initHelperAddCluster(entry);
    } else {
      log.accept("add/update cluster " + cluster.getName() + " starting warming");
      entry.initialize(() -> onClusterInit(entry));
    }
    if (previous != null) {
      previous.destroy();
    }
    return true;
  }

  /**
   * {@code ClusterManagerImpl::removeCluster}: only clusters added by CDS go, active and warming
   * alike.
   */
  private boolean removeCluster(String name) {
    boolean removed = false;
    ClusterEntry active = activeClusters.get(name);
    if (active != null && active.addedViaApi) {
      removed = true;
      initHelperRemoveCluster(active);
      activeClusters.remove(name);
      active.destroy();
    }
    ClusterEntry warming = warmingClusters.get(name);
    if (warming != null && warming.addedViaApi) {
      removed = true;
      initHelperRemoveCluster(warming);
      warmingClusters.remove(name);
      warming.destroy();
    }
    if (removed) {
      updateClusterCounts();
    }
    return removed;
  }

  /**
   * {@code ClusterManagerImpl::updateClusterCounts}: once all clusters are initialized, CDS is
   * paused while any cluster warms, which holds back the CDS ACK (and any CDS request) until the
   * last one is warm (envoy#5887, #31863). During initialization it is not: the first CDS ACK goes
   * out at once.
   */
  private void updateClusterCounts() {
    if (state != InitState.ALL_CLUSTERS_INITIALIZED) {
      return;
    }
    if (resumeCds == null && !warmingClusters.isEmpty()) {
      log.accept("CDS paused: " + warmingClusters.keySet() + " warming");
      resumeCds = mux.pause(TypeUrl.CLUSTER);
    } else if (resumeCds != null && warmingClusters.isEmpty()) {
      log.accept("CDS resumed: no cluster warming");
      EnvoyMux.Resume resume = resumeCds;
      resumeCds = null;
      resume.run();
    }
  }

  // CdsApiImpl and CdsApiHelper

  /** {@code CdsApiImpl::initialize}: the wildcard CDS subscription. */
  private void cdsInitialize() {
    cdsInitializeCallbackPending = true;
    mux.addWatch(TypeUrl.CLUSTER, Set.of(), new CdsCallbacks());
  }

  /**
   * {@code CdsApiImpl::runInitializeCallbackIfAny}: the first CDS update (or failure) lets init go
   * on.
   */
  private void runCdsInitializeCallbackIfAny() {
    if (cdsInitializeCallbackPending) {
      cdsInitializeCallbackPending = false;
      state = InitState.CDS_INITIALIZED;
      maybeFinishInitialize();
    }
  }

  private final class CdsCallbacks implements EnvoyMux.SubscriptionCallbacks {

    /**
     * {@code CdsApiImpl::onConfigUpdate} (SotW): every cluster, active or warming, that the
     * response lacks is removed; the response is the state of the world.
     */
    @Override
    public void onConfigUpdate(List<DecodedResource> resources, String versionInfo) {
      Set<String> toRemove = new HashSet<>(activeClusters.keySet());
      toRemove.addAll(warmingClusters.keySet());
      resources.forEach(resource -> toRemove.remove(resource.name()));
      onConfigUpdate(resources, List.copyOf(toRemove), versionInfo);
    }

    /**
     * {@code CdsApiHelper::onConfigUpdate} then {@code CdsApiImpl}: EDS is paused for the whole
     * update, so the EDS watches of new and changed clusters go out as one request after it; a
     * duplicate or unusable cluster is reported (NACK) after the others are applied; removals come
     * last; the init callback runs before the NACK is raised.
     */
    @Override
    public void onConfigUpdate(
        List<DecodedResource> added, List<String> removed, String systemVersionInfo) {
      List<String> errors = new ArrayList<>();
      EnvoyMux.Resume resumeEds = mux.pause(TypeUrl.ENDPOINT);
      try {
        Set<String> names = new HashSet<>();
        int applied = 0;
        int skipped = 0;
        for (DecodedResource resource : added) {
          if (!(resource.resource() instanceof Cluster cluster)) {
            errors.add(resource.name() + ": no Cluster in the resource");
            continue;
          }
          if (!names.add(cluster.getName())) {
            errors.add(cluster.getName() + ": duplicate cluster " + cluster.getName() + " found");
            continue;
          }
          try {
            if (addOrUpdateCluster(cluster)) {
              applied++;
            } else {
              skipped++;
            }
          } catch (RejectedUpdate invalid) {
            errors.add(cluster.getName() + ": " + invalid.getMessage());
          }
        }
        removed.forEach(EnvoyClusterManager.this::removeCluster);
        log.accept(
            "cds: added/updated "
                + applied
                + " cluster(s), skipped "
                + skipped
                + " unmodified cluster(s)");
      } finally {
        resumeEds.run();
      }
      runCdsInitializeCallbackIfAny();
      if (!errors.isEmpty()) {
        throw new RejectedUpdate("Error adding/updating cluster(s) " + String.join(", ", errors));
      }
    }

    /** {@code CdsApiImpl::onConfigUpdateFailed}: start-up goes on even with a bad CDS response. */
    @Override
    public void onConfigUpdateFailed(FailureReason reason) {
      runCdsInitializeCallbackIfAny();
    }
  }

  // ClusterData and EdsClusterImpl

  /**
   * One cluster: its config ({@code ClusterData}) and, for an EDS cluster, its subscription and
   * hosts ({@code EdsClusterImpl}). A cluster of another type needs nothing from xDS and
   * initializes at once.
   */
  private final class ClusterEntry implements EnvoyMux.SubscriptionCallbacks {
    final Cluster config;
    final boolean addedViaApi;
    final Instant warmingSince = clock.get();
    ClusterLoadAssignment assignment;
    WarmCause warmCause;
    private Runnable initializationCompleteCallback;
    private boolean initializationStarted;
    private EnvoyMux.Watch watch;
    private Runnable cancelInitFetchTimeout;
    private boolean destroyed;

    ClusterEntry(Cluster config, boolean addedViaApi) {
      // EdsClusterFactory::createClusterImpl.
      if (config.getType() == Cluster.DiscoveryType.EDS && !config.hasEdsClusterConfig()) {
        throw new RejectedUpdate("cannot create an EDS cluster without an EDS config");
      }
      this.config = config;
      this.addedViaApi = addedViaApi;
    }

    String name() {
      return config.getName();
    }

    boolean isEds() {
      return config.getType() == Cluster.DiscoveryType.EDS;
    }

    /**
     * {@code EdsClusterImpl::edsServiceName}: eds_cluster_config.service_name, else the cluster's
     * name.
     */
    String edsServiceName() {
      String serviceName = config.getEdsClusterConfig().getServiceName();
      return serviceName.isEmpty() ? config.getName() : serviceName;
    }

    /** {@code ClusterData::blockUpdate}: a bootstrap cluster, or one whose content is unchanged. */
    boolean blocksUpdate(Cluster update) {
      return !addedViaApi || config.equals(update);
    }

    /**
     * {@code ClusterImplBase::initialize} and {@code EdsClusterImpl::startPreInit}: the EDS
     * subscription starts ({@code GrpcSubscriptionImpl::start} arms {@code
     * init_fetch_timeout_timer_} when the timeout is above zero, then adds the watch).
     */
    void initialize(Runnable callback) {
      initializationCompleteCallback = callback;
      if (!isEds()) {
        assignment = config.hasLoadAssignment() ? config.getLoadAssignment() : null;
        onPreInitComplete(WarmCause.NO_EDS);
        return;
      }
      log.accept("cluster " + name() + " warming on EDS " + edsServiceName());
      if (initialFetchTimeout.compareTo(Duration.ZERO) > 0) {
        cancelInitFetchTimeout =
            timers.schedule(
                initialFetchTimeout, () -> onConfigUpdateFailed(FailureReason.FETCH_TIMED_OUT));
      }
      watch = mux.addWatch(TypeUrl.ENDPOINT, Set.of(edsServiceName()), this);
    }

    /** {@code ClusterImplBase::onPreInitComplete}: once only; then the cluster is initialized. */
    private void onPreInitComplete(WarmCause cause) {
      if (initializationStarted || destroyed) {
        return;
      }
      initializationStarted = true;
      warmCause = cause;
      initializationCompleteCallback.run();
    }

    private void disableInitFetchTimeout() {
      if (cancelInitFetchTimeout != null) {
        cancelInitFetchTimeout.run();
        cancelInitFetchTimeout = null;
      }
    }

    /**
     * {@code EdsClusterImpl::onConfigUpdate} (behind {@code GrpcSubscriptionImpl::onConfigUpdate},
     * which first disarms the initial fetch timer): no resource (a Delta removal) completes warming
     * with the hosts it has, none for a new cluster ("update_empty"); more than one, or one for
     * another name, is rejected; else the hosts are replaced and warming completes.
     */
    @Override
    public void onConfigUpdate(List<DecodedResource> resources, String versionInfo) {
      disableInitFetchTimeout();
      if (resources.isEmpty()) {
        onPreInitComplete(WarmCause.REMOVED_BY_SERVER);
        return;
      }
      if (resources.size() != 1) {
        throw new RejectedUpdate("Unexpected EDS resource length: " + resources.size());
      }
      if (!(resources.get(0).resource() instanceof ClusterLoadAssignment update)) {
        throw new RejectedUpdate(
            "no ClusterLoadAssignment in the resource for " + edsServiceName());
      }
      if (!update.getClusterName().equals(edsServiceName())) {
        throw new RejectedUpdate(
            "Unexpected EDS cluster (expecting "
                + edsServiceName()
                + "): "
                + update.getClusterName());
      }
      assignment = update;
      onPreInitComplete(WarmCause.ASSIGNMENT);
    }

    /**
     * {@code EdsClusterImpl::onConfigUpdate(added, removed, …)}: the removals are not looked at,
     * only whether anything was added.
     */
    @Override
    public void onConfigUpdate(
        List<DecodedResource> added, List<String> removed, String systemVersionInfo) {
      onConfigUpdate(added, systemVersionInfo);
    }

    /**
     * {@code EdsClusterImpl::onConfigUpdateFailed}: a timed-out fetch uses the EDS cache when it
     * has the name, else it, like a rejected update, completes warming with the hosts there are.
     */
    @Override
    public void onConfigUpdateFailed(FailureReason reason) {
      disableInitFetchTimeout();
      if (reason == FailureReason.FETCH_TIMED_OUT) {
        log.accept(
            "gRPC config: initial fetch timed out for EDS "
                + edsServiceName()
                + " (cluster "
                + name()
                + ")");
        ClusterLoadAssignment cached = edsCache == null ? null : edsCache.get(edsServiceName());
        if (cached != null) {
          assignment = cached;
          onPreInitComplete(WarmCause.INITIAL_FETCH_TIMEOUT_CACHED);
          return;
        }
        onPreInitComplete(WarmCause.INITIAL_FETCH_TIMEOUT);
      } else {
        onPreInitComplete(WarmCause.REJECTED_UPDATE);
      }
    }

    /** The cluster object goes: its subscription's watch with it, and its timer. */
    void destroy() {
      destroyed = true;
      disableInitFetchTimeout();
      if (watch != null) {
        watch.remove();
      }
    }
  }

  private static int hostCount(ClusterLoadAssignment assignment) {
    return assignment.getEndpointsList().stream()
        .mapToInt(locality -> locality.getLbEndpointsCount())
        .sum();
  }
}
