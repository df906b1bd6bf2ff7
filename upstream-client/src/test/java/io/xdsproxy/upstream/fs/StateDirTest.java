package io.xdsproxy.upstream.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.Secret;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.NodeGroupRule;
import io.xdsproxy.core.NodeGroups;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.SavedState;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.core.testing.FakeClock;
import io.xdsproxy.core.testing.ScriptedUpstream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --state-dir} on disk: what a group's changes write (a directory the filesystem source
 * serves, do_not_cache and Secrets left out, TTLs counted down), what a crash or a bad file leaves
 * (the previous generation, skipped and counted), and how often a burst writes.
 */
class StateDirTest {

  private static final Node NODE = Node.newBuilder().setId("envoy-1").setCluster("fleet").build();
  private static final NodeGroupKey FLEET = new NodeGroupKey("fleet");

  @TempDir Path directory;

  private final FakeClock time = new FakeClock();
  private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
  private final List<AutoCloseable> opened = new ArrayList<>();
  private final ScriptedUpstream upstream = new ScriptedUpstream(true);

  @AfterEach
  void close() throws Exception {
    for (int i = opened.size() - 1; i >= 0; i--) {
      opened.get(i).close();
    }
  }

  @Test
  void aSavedGroupIsADirectoryTheFileSystemSourceServesAndReadsBackWithItsTtlsCountedDown()
      throws Exception {
    StateDir state = stateDir(false);
    NodeGroups groups = groups(state);
    groups.acquire(NODE);
    upstream.send(
        ResourceUpdate.complete(
            TypeUrl.CLUSTER, List.of(cluster("plain"), withTtl(cluster("leased"), 60))));
    state.close();

    List<Path> generations = generations();
    assertThat(generations).hasSize(1);
    try (Stream<Path> files = Files.list(generations.get(0))) {
      assertThat(files.map(file -> file.getFileName().toString()))
          .containsExactlyInAnyOrder(
              "envoy.config.cluster.v3.Cluster.json", GroupStateFiles.MANIFEST);
    }
    Map<TypeUrl, List<XdsResource>> served = new ConcurrentHashMap<>();
    try (FileSystemSource source = new FileSystemSource(generations.get(0))) {
      source.open(
          FLEET,
          NODE,
          "address 192.0.2.1",
          update -> served.put(update.type(), update.resources()));
      await().until(() -> served.containsKey(TypeUrl.CLUSTER));
    }
    assertThat(served.get(TypeUrl.CLUSTER))
        .extracting(XdsResource::name)
        .containsExactlyInAnyOrder("plain", "leased");

    time.forwardTime(Duration.ofSeconds(20));
    SavedState loaded = stateDir(false).load(FLEET).orElseThrow();
    SavedState.Type clusters = loaded.types().get(TypeUrl.CLUSTER);
    assertThat(clusters.complete()).isTrue();
    XdsResource leased =
        clusters.resources().stream().filter(r -> r.name().equals("leased")).findFirst().get();
    assertThat(Durations.toMillis(leased.ttl().get()))
        .as("what was left of the TTL less the time since")
        .isEqualTo(40_000);
    assertThat(leased.version()).isEqualTo(cluster("leased").version());
  }

  @Test
  void aResourceWhoseTtlLapsedOnDiskIsNotServed() throws Exception {
    StateDir state = stateDir(false);
    groups(state).acquire(NODE);
    upstream.send(
        ResourceUpdate.complete(
            TypeUrl.CLUSTER, List.of(cluster("plain"), withTtl(cluster("leased"), 10))));
    state.close();

    time.forwardTime(Duration.ofSeconds(11));
    SavedState loaded = stateDir(false).load(FLEET).orElseThrow();
    assertThat(loaded.types().get(TypeUrl.CLUSTER).resources())
        .extracting(XdsResource::name)
        .containsExactly("plain");
  }

  @Test
  void doNotCacheIsNeverWrittenNorSecretsWithoutTheFlag() throws Exception {
    StateDir state = stateDir(false);
    groups(state).acquire(NODE);
    XdsResource uncacheable =
        new XdsResource(
            "fresh-only",
            "1",
            Any.pack(Cluster.newBuilder().setName("fresh-only").build()),
            List.of(),
            Optional.empty(),
            true);
    upstream.send(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("kept"), uncacheable)));
    upstream.send(ResourceUpdate.complete(TypeUrl.SECRET, List.of(secret("key"))));
    state.close();

    Path generation = generations().get(0);
    String clusters = Files.readString(generation.resolve("envoy.config.cluster.v3.Cluster.json"));
    assertThat(clusters).contains("kept").doesNotContain("fresh-only");
    assertThat(generation.resolve("envoy.extensions.transport_sockets.tls.v3.Secret.json"))
        .doesNotExist();
    SavedState loaded = stateDir(false).load(FLEET).orElseThrow();
    assertThat(loaded.types().get(TypeUrl.CLUSTER).complete())
        .as("what was kept is not every Cluster: one was not to be kept")
        .isFalse();
  }

  @Test
  void secretsAreWrittenWithTheFlagReadableByTheProxysUserAlone() throws Exception {
    StateDir state = stateDir(true);
    groups(state).acquire(NODE);
    upstream.send(ResourceUpdate.complete(TypeUrl.SECRET, List.of(secret("key"))));
    state.close();

    Path generation = generations().get(0);
    Path secrets = generation.resolve("envoy.extensions.transport_sockets.tls.v3.Secret.json");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(secrets)))
        .isEqualTo("rw-------");
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(generation)))
        .isEqualTo("rwx------");
    assertThat(stateDir(true).load(FLEET).orElseThrow().types()).containsKey(TypeUrl.SECRET);
    assertThat(stateDir(false).load(FLEET).orElseThrow().types())
        .as("without the flag, Secrets an earlier run kept are not served")
        .doesNotContainKey(TypeUrl.SECRET);
  }

  @Test
  void aCrashMidWriteLeavesThePreviousGenerationReadable() throws Exception {
    StateDir state = stateDir(false);
    groups(state).acquire(NODE);
    upstream.send(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("good"))));
    state.close();
    Path good = generations().get(0);
    String base = GroupStateFiles.baseName(FLEET);
    // A write cut short before its rename, and one whose file was cut short after it.
    Path unfinished = Files.createDirectory(directory.resolve(base + ".g7.tmp"));
    Files.writeString(unfinished.resolve("envoy.config.cluster.v3.Cluster.json"), "{\"type");
    Path torn = copy(good, directory.resolve(base + ".g8"));
    Path tornFile = torn.resolve("envoy.config.cluster.v3.Cluster.json");
    byte[] bytes = Files.readAllBytes(tornFile);
    Files.write(tornFile, java.util.Arrays.copyOf(bytes, bytes.length / 2));

    StateDir restarted = stateDir(false);

    assertThat(restarted.load(FLEET).orElseThrow().types().get(TypeUrl.CLUSTER).resources())
        .extracting(XdsResource::name)
        .containsExactly("good");
    assertThat(unfinished).as("what the interrupted write left").doesNotExist();
    assertThat(loadFailures("corrupt")).isEqualTo(1);
  }

  @Test
  void badStatesAreSkippedWithTheirReasonAndTheOthersServed() throws Exception {
    for (String group : List.of("good", "other-format", "wrong-key", "corrupt")) {
      StateDir state = stateDir(false);
      groups(state).acquire(Node.newBuilder().setId("envoy").setCluster(group).build());
      upstream.send(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster(group))));
      state.close();
      upstream.forgetGroups();
    }
    rewriteManifest("other-format", "format=1", "format=99");
    rewriteManifest("wrong-key", "group=wrong-key", "group=someone-else");
    Path corrupt = generationOf("corrupt").resolve("envoy.config.cluster.v3.Cluster.json");
    Files.writeString(corrupt, "not json at all");

    StateDir restarted = stateDir(false);

    assertThat(restarted.load(new NodeGroupKey("good"))).isPresent();
    assertThat(restarted.load(new NodeGroupKey("other-format"))).isEmpty();
    assertThat(restarted.load(new NodeGroupKey("wrong-key"))).isEmpty();
    assertThat(restarted.load(new NodeGroupKey("someone-else"))).isEmpty();
    assertThat(restarted.load(new NodeGroupKey("corrupt"))).isEmpty();
    assertThat(loadFailures("format")).isEqualTo(1);
    assertThat(loadFailures("key")).isEqualTo(1);
    assertThat(loadFailures("corrupt")).isEqualTo(1);
    assertThat(restarted.foundWrittenAt()).isPresent();
  }

  @Test
  void aBurstOfUpdatesCostsAtMostOneWritePerSecondAndTheLastIsWritten() throws Exception {
    StateDir state = stateDir(false);
    groups(state).acquire(NODE);
    long start = System.nanoTime();
    for (int i = 0; i < 100; i++) {
      upstream.send(ResourceUpdate.complete(TypeUrl.CLUSTER, List.of(cluster("c" + i))));
      // A burst as a control plane sends one, spread over 1.5 s: the writer could write each.
      Thread.sleep(15);
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    assertThat(writes()).as("writes in %.1f s", seconds).isBetween(1.0, Math.ceil(seconds) + 1);
    state.close();

    assertThat(stateDir(false).load(FLEET).orElseThrow().types().get(TypeUrl.CLUSTER).resources())
        .extracting(XdsResource::name)
        .containsExactly("c99");
  }

  private StateDir stateDir(boolean includeSecrets) throws IOException {
    StateDir state =
        new StateDir(
            directory, includeSecrets, time.clock(), Duration.ofSeconds(15), "test", meters);
    opened.add(state);
    return state;
  }

  private NodeGroups groups(StateDir state) {
    NodeGroups groups =
        new NodeGroups(
            NodeGroupRule.of(List.of("cluster")),
            NodeGroups.firstClientsNode(),
            upstream,
            Runnable::run,
            time.scheduler(),
            time.ticker(),
            Duration.ofMinutes(5),
            meters,
            state);
    opened.add(groups);
    return groups;
  }

  private double writes() {
    return meters.counter("xds.state.writes").count();
  }

  private double loadFailures(String reason) {
    return meters.counter("xds.state.load.failures", "reason", reason).count();
  }

  private List<Path> generations() throws IOException {
    try (Stream<Path> entries = Files.list(directory)) {
      return entries.filter(Files::isDirectory).sorted().toList();
    }
  }

  private Path generationOf(String group) throws IOException {
    String base = GroupStateFiles.baseName(new NodeGroupKey(group));
    return generations().stream()
        .filter(path -> path.getFileName().toString().startsWith(base + "."))
        .findFirst()
        .orElseThrow();
  }

  private void rewriteManifest(String group, String from, String to) throws IOException {
    Path manifest = generationOf(group).resolve(GroupStateFiles.MANIFEST);
    String text = Files.readString(manifest, StandardCharsets.ISO_8859_1);
    assertThat(text).contains(from);
    Files.writeString(manifest, text.replace(from, to), StandardCharsets.ISO_8859_1);
  }

  private static Path copy(Path from, Path to) throws IOException {
    Files.createDirectory(to);
    try (Stream<Path> files = Files.list(from)) {
      for (Path file : files.toList()) {
        Files.copy(file, to.resolve(file.getFileName()));
      }
    }
    return to;
  }

  private static XdsResource cluster(String name) {
    return XdsResource.of(name, Any.pack(Cluster.newBuilder().setName(name).build()));
  }

  private static XdsResource secret(String name) {
    return XdsResource.of(name, Any.pack(Secret.newBuilder().setName(name).build()));
  }

  private static XdsResource withTtl(XdsResource resource, long seconds) {
    return new XdsResource(
        resource.name(),
        resource.version(),
        resource.body(),
        List.of(),
        Optional.of(Durations.fromSeconds(seconds)),
        false);
  }
}
