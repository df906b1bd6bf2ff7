package io.xdsproxy.app;

import static io.xdsproxy.app.testing.XdsTestClient.node;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.netty.NettyChannelBuilder;
import io.xdsproxy.app.testing.ControlPlaneCell;
import io.xdsproxy.app.testing.ConvergenceChecker;
import io.xdsproxy.app.testing.ConvergenceChecker.ClientDifference;
import io.xdsproxy.app.testing.Resources;
import io.xdsproxy.app.testing.TcpBalancer;
import io.xdsproxy.app.testing.VariantClient;
import io.xdsproxy.app.testing.VariantClient.Variant;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.upstream.grpc.AdsUpstream.Protocol;
import io.xdsproxy.upstream.testing.ControlPlaneKind;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Issue 8: replicas. Proxy processes, each a JVM of its own as deployed, behind a TCP round-robin
 * balancer, with java-control-plane upstream and raw clients of every variant downstream, each on a
 * connection of its own. The clients spread over the replicas and converge; each replica holds its
 * own upstream session per node group (the control plane sees one stream per group per replica,
 * never one per client); and when a replica is added, the maximum connection age moves clients onto
 * it, without any of them losing what it holds.
 *
 * <p>The clients reconnect by themselves, as Envoy and gRPC do: a stream ended with UNAVAILABLE
 * (its aged connection closed after GOAWAY and the grace) is opened again on the same channel,
 * which makes a new connection, which the balancer sends to the next replica. Any other end fails
 * the test.
 */
class ReplicasTest {

  /** A JVM starting on a loaded two-core machine, four of them at once at worst. */
  private static final Duration START = Duration.ofSeconds(60);

  private static final Duration WAIT = Duration.ofSeconds(30);

  /** Short, so that clients move within the test; gRPC's minimum is 1 s. */
  private static final Duration AGE = Duration.ofSeconds(2);

  /**
   * Every client's connection ends within the age (+10 % jitter) and the grace after GOAWAY; twice
   * that and room for a slow machine, for a share of them to land on an added replica.
   */
  private static final Duration MOVED =
      AGE.multipliedBy(11)
          .dividedBy(10)
          .plus(XdsTransport.CONNECTION_AGE_GRACE)
          .multipliedBy(2)
          .plusSeconds(15);

  private static final List<String> GROUPS = List.of("blue", "green", "red");
  private static final int CLIENTS = 12;
  private static final int FIRST_REPLICAS = 3;

  /**
   * Endpoints every client asks for by name; they exist in every snapshot (java-control-plane
   * answers no name it lacks).
   */
  private static final String[] ENDPOINT_NAMES = {"c-0", "c-1"};

  /** The proxies' output, kept after the test for a failure's reader. */
  private static final Path LOGS = Path.of("target", "ReplicasTest");

  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final List<Replica> replicas = new ArrayList<>();

  /** Every proxy process started, ready or not: all are stopped after the test. */
  private final List<Process> processes = new ArrayList<>();

  private final List<ManagedChannel> channels = new ArrayList<>();
  private final List<VariantClient> clients = new ArrayList<>();

  /**
   * Every (replica, group) seen serving a client, as the upstream node id that replica uses for
   * that group.
   */
  private final Set<String> seenServing = new TreeSet<>();

  private UpstreamControlPlane controlPlane;
  private ControlPlaneCell cell;
  private TcpBalancer balancer;
  private int reconnects;

  /** When each step was done, printed at the end: what a slow machine spent its time on. */
  private final List<String> timeline = new ArrayList<>();

  private final long started = System.nanoTime();

  private void done(String step) {
    timeline.add(String.format("%.1f s %s", (System.nanoTime() - started) / 1e9, step));
  }

  /** A proxy process; {@code number} counts from 1. */
  private record Replica(int number, Path log, int xdsPort, int monitoringPort, int adminPort) {
    InetSocketAddress xdsAddress() {
      return new InetSocketAddress("127.0.0.1", xdsPort);
    }

    @Override
    public String toString() {
      return "replica "
          + number
          + " (xDS port "
          + xdsPort
          + ", admin "
          + adminPort
          + ", log "
          + log.toAbsolutePath()
          + ")";
    }
  }

  @AfterEach
  void stopAll() throws Exception {
    clients.forEach(VariantClient::close);
    channels.forEach(ManagedChannel::shutdownNow);
    if (balancer != null) {
      balancer.close();
    }
    // SIGTERM to all first, so that they drain (--drain-time 1s) side by side.
    processes.forEach(Process::destroy);
    for (Process process : processes) {
      if (!process.waitFor(15, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(15, TimeUnit.SECONDS);
      }
    }
    if (controlPlane != null) {
      controlPlane.close();
    }
  }

  /**
   * The replicas in front of java-control-plane over SotW and of the model of istiod over Delta
   * (its default): what spreading clients over replicas does to an upstream depends on how it
   * answers each replica's sessions, and these two answer a fresh session (the added replica's) by
   * different rules and protocols. Two cells, not every one: each starts four JVMs, twenty seconds
   * of the suite. go-control-plane over SotW was the third; a replica's sessions are the single
   * proxy's, whose every rule against go-control-plane ControlPlaneMatrixTest and FaultsTest run.
   */
  static Stream<ControlPlaneCell> cells() {
    return Stream.of(
        new ControlPlaneCell(ControlPlaneKind.JAVA_CONTROL_PLANE, Protocol.SOTW),
        new ControlPlaneCell(ControlPlaneKind.ISTIOD, Protocol.DELTA));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cells")
  void clientsSpreadOverReplicasConvergeAndAgedConnectionsMoveThemOntoAnAddedReplica(
      ControlPlaneCell cell) throws Exception {
    this.cell = cell;
    controlPlane = cell.create();
    Map<String, Snapshot> served = serve(1);
    List<Process> starting =
        IntStream.rangeClosed(1, FIRST_REPLICAS).mapToObj(this::launch).toList();
    for (int i = 0; i < FIRST_REPLICAS; i++) {
      replicas.add(awaitReady(i + 1, starting.get(i)));
    }
    balancer = new TcpBalancer(replicas.stream().map(Replica::xdsAddress).toList());
    done("three replicas ready");

    // Client i's connection is the balancer's i-th, so it goes to replica i % 3 + 1; its group is
    // (i / 3) % 3, so each replica serves each group, and a client of each variant.
    for (int i = 0; i < CLIENTS; i++) {
      Variant variant = Variant.values()[i % Variant.values().length];
      String group = GROUPS.get(i / FIRST_REPLICAS % GROUPS.size());
      ManagedChannel channel =
          NettyChannelBuilder.forAddress("127.0.0.1", balancer.port()).usePlaintext().build();
      channels.add(channel);
      VariantClient client =
          new VariantClient(
              variant, channel, node(String.format("client-%02d-%s", i, variant), group));
      clients.add(client);
      client.subscribe(TypeUrl.CLUSTER);
      client.subscribe(TypeUrl.ENDPOINT, ENDPOINT_NAMES);
      int connections = i + 1;
      await().atMost(WAIT).until(() -> balancer.acceptedConnections() >= connections);
    }
    assertThat(balancer.connectionsPerBackend().values())
        .as(
            "connections per replica after each client connected once: %s",
            balancer.connectionsPerBackend())
        .containsExactly(
            CLIENTS / FIRST_REPLICAS, CLIENTS / FIRST_REPLICAS, CLIENTS / FIRST_REPLICAS);

    awaitConverged("three replicas, first state", served, WAIT);
    done("clients converged on three replicas");
    Map<Integer, Set<String>> placed = awaitEveryReplicaServes(replicas, WAIT);
    assertThat(controlPlane.streamNodeIds())
        .as(
            "the control plane's streams, by upstream node id, with clients placed %s: one per group per replica",
            placed)
        .containsExactlyInAnyOrderElementsOf(
            IntStream.rangeClosed(1, FIRST_REPLICAS)
                .boxed()
                .flatMap(replica -> GROUPS.stream().map(group -> upstreamNodeId(replica, group)))
                .toList());

    served = serve(2);
    awaitConverged("three replicas, after a change", served, WAIT);
    done("converged after a change");

    Replica added = awaitReady(FIRST_REPLICAS + 1, launch(FIRST_REPLICAS + 1));
    replicas.add(added);
    balancer.addBackend(added.xdsAddress());
    done("fourth replica ready and added");
    // Every client started on one of the first replicas: those on the added one moved there.
    Set<String> moved = awaitClientsOn(added, 2, MOVED);
    done("clients moved onto the fourth");

    served = serve(3);
    awaitConverged("four replicas, after a change", served, WAIT);
    done("converged on four replicas after a change");
    awaitEveryReplicaServes(replicas, WAIT);
    assertOneUpstreamStreamPerGroupPerReplica();
    System.out.printf(
        "replicas: %d reconnects by aged connections; connections per replica %s; clients on the added one %s;"
            + " upstream streams %s; timeline %s%n",
        reconnects,
        balancer.connectionsPerBackend(),
        moved,
        new TreeSet<>(controlPlane.streamNodeIds()),
        timeline);
  }

  /**
   * Starts replica {@code number}: a JVM running {@link Main} on this test's class path, its output
   * to its log.
   */
  private Process launch(int number) {
    try {
      Files.createDirectories(LOGS);
      Path log = logOf(number);
      List<String> command =
          List.of(
              Path.of(System.getProperty("java.home"), "bin", "java").toString(),
              // A small proxy: quick to start, and four of them fit beside the build on two cores.
              "-Xmx256m",
              "-XX:+UseSerialGC",
              "-XX:TieredStopAtLevel=1",
              "-cp",
              System.getProperty("java.class.path"),
              Main.class.getName(),
              "--upstream",
              controlPlane.target(),
              "--upstream-protocol",
              cell.upstream().name().toLowerCase(Locale.ROOT),
              "--xds-port",
              "0",
              "--monitoring-port",
              "0",
              "--admin-port",
              "0",
              "--max-connection-age",
              AGE.toSeconds() + "s",
              "--drain-time",
              "1s",
              // The control plane tells the replicas' sessions apart by the node id they use.
              "--upstream-node-id",
              "replica-" + number + "/{group}");
      Process process =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      processes.add(process);
      return process;
    } catch (IOException e) {
      throw new AssertionError("cannot start replica " + number, e);
    }
  }

  private static Path logOf(int number) {
    return LOGS.resolve("replica-" + number + ".log");
  }

  /**
   * Waits for {@code process} to log its ports and be ready (the control plane reached), as a
   * balancer's health check would.
   */
  private Replica awaitReady(int number, Process process) {
    Path log = logOf(number);
    try {
      await()
          .atMost(START)
          .until(() -> !process.isAlive() || Main.Listening.in(Files.readString(log)).isPresent());
    } catch (ConditionTimeoutException e) {
      throw new AssertionError(
          "replica "
              + number
              + " did not log where it listens within "
              + START
              + "; its log:\n"
              + read(log),
          e);
    }
    Optional<Main.Listening> ports = Main.Listening.in(read(log));
    if (!process.isAlive() || ports.isEmpty()) {
      throw new AssertionError(
          "replica " + number + " exited with " + process.exitValue() + "; its log:\n" + read(log));
    }
    Replica replica =
        new Replica(
            number,
            log,
            ports.get().xdsPort(),
            ports.get().monitoringPort(),
            ports.get().adminPort());
    try {
      await()
          .atMost(WAIT)
          .ignoreExceptions()
          .until(() -> get(replica, "/readyz").statusCode() == 200);
    } catch (ConditionTimeoutException e) {
      throw new AssertionError(replica + " never became ready; its log:\n" + read(log), e);
    }
    return replica;
  }

  /**
   * The control plane serves generation {@code generation} to every group, each group's state its
   * own.
   */
  private Map<String, Snapshot> serve(int generation) {
    Map<String, Snapshot> served = new TreeMap<>();
    for (int g = 0; g < GROUPS.size(); g++) {
      List<Cluster> clusters = new ArrayList<>();
      List<ClusterLoadAssignment> endpoints = new ArrayList<>();
      for (int c = 0; c < 5; c++) {
        clusters.add(
            Resources.cluster("c-" + c).toBuilder()
                .setConnectTimeout(
                    com.google.protobuf.Duration.newBuilder().setSeconds(generation * 10L + g))
                .build());
        endpoints.add(Resources.endpoints("c-" + c, 10_000 + generation * 100 + g * 10 + c));
      }
      Snapshot snapshot =
          Snapshot.create(clusters, endpoints, List.of(), List.of(), List.of(), "v" + generation);
      controlPlane.setSnapshot(GROUPS.get(g), snapshot);
      served.put(GROUPS.get(g), snapshot);
    }
    return served;
  }

  /**
   * What a real client does between the test's checks: reads and answers what arrived, and reopens
   * its streams when its connection aged out. A stream that ended any other way fails the test.
   */
  private void keepClientsConnected() {
    for (VariantClient client : clients) {
      client.pump();
      List<Status> ends = client.streamEnds();
      if (ends.isEmpty()) {
        continue;
      }
      if (ends.stream().anyMatch(end -> end.getCode() != Status.Code.UNAVAILABLE)) {
        throw new AssertionError(
            "client "
                + client.node().getId()
                + " (group "
                + client.node().getCluster()
                + ", "
                + client.variant()
                + "), last seen on "
                + whereIs(client)
                + ": a stream ended with "
                + ends
                + ", where only UNAVAILABLE (an aged connection closed) was expected; exchanged:\n"
                + client.transcript(TypeUrl.CLUSTER)
                + "\n"
                + client.transcript(TypeUrl.ENDPOINT));
      }
      client.reconnect(null);
      reconnects++;
    }
  }

  /**
   * Waits until every client holds {@code served} for its group, reconnecting as connections age;
   * fails naming each client and its replica.
   */
  private void awaitConverged(String when, Map<String, Snapshot> served, Duration bound) {
    ConvergenceChecker checker = new ConvergenceChecker().clients(clients);
    served.forEach(checker::upstream);
    try {
      await()
          .atMost(bound)
          .pollInSameThread()
          .pollDelay(Duration.ZERO)
          .pollInterval(Duration.ofMillis(50))
          .until(
              () -> {
                keepClientsConnected();
                return checker.differences().isEmpty();
              });
    } catch (ConditionTimeoutException e) {
      keepClientsConnected();
      List<ClientDifference> differences = checker.differences();
      if (differences.isEmpty()) {
        return;
      }
      StringBuilder report =
          new StringBuilder(when)
              .append(": ")
              .append(differences.size())
              .append(" of ")
              .append(clients.size())
              .append(" clients did not converge within ")
              .append(bound)
              .append(" to what the control plane serves their group (versions ")
              .append(
                  served.values().stream()
                      .map(snapshot -> snapshot.version(TypeUrl.CLUSTER.url()))
                      .distinct()
                      .toList())
              .append("):\n");
      for (ClientDifference difference : differences) {
        report
            .append("  ")
            .append(difference.describe())
            .append("\n    on ")
            .append(whereIs(difference.client()))
            .append('\n');
      }
      ClientDifference first = differences.get(0);
      report
          .append("exchanged by ")
          .append(first.client().node().getId())
          .append(":\n")
          .append(first.client().transcript(TypeUrl.CLUSTER))
          .append('\n');
      if (!first.client().variant().ads()) {
        report.append(first.client().transcript(TypeUrl.ENDPOINT)).append('\n');
      }
      report
          .append("balancer: connections per replica ")
          .append(balancer.connectionsPerBackend())
          .append(", open ")
          .append(balancer.openConnectionsPerBackend())
          .append("; replicas: ")
          .append(replicas);
      throw new AssertionError(report.toString(), e);
    }
  }

  /**
   * Waits until each of {@code these} replicas holds a stream of some client; returns the clients
   * each holds.
   */
  private Map<Integer, Set<String>> awaitEveryReplicaServes(List<Replica> these, Duration bound) {
    try {
      return await()
          .atMost(bound)
          .pollInSameThread()
          .pollInterval(Duration.ofMillis(100))
          .until(
              () -> {
                keepClientsConnected();
                Map<Integer, Set<String>> placed = new TreeMap<>();
                for (Replica replica : these) {
                  placed.put(replica.number(), clientsOn(replica).keySet());
                }
                return placed;
              },
              placed -> placed.values().stream().noneMatch(Set::isEmpty));
    } catch (ConditionTimeoutException e) {
      throw new AssertionError(
          "every replica to hold streams within "
              + bound
              + "; clients per replica: "
              + these.stream().collect(Collectors.toMap(Replica::number, this::clientsOnQuietly))
              + "; balancer: "
              + balancer.connectionsPerBackend(),
          e);
    }
  }

  /**
   * Waits until {@code replica} holds streams of at least {@code count} clients, reconnecting the
   * clients as their connections age; returns them.
   */
  private Set<String> awaitClientsOn(Replica replica, int count, Duration bound) {
    try {
      return await()
          .atMost(bound)
          .pollInSameThread()
          .pollInterval(Duration.ofMillis(100))
          .until(
              () -> {
                keepClientsConnected();
                return clientsOn(replica).keySet();
              },
              on -> on.size() >= count);
    } catch (ConditionTimeoutException e) {
      throw new AssertionError(
          "the added "
              + replica
              + " to hold streams of at least "
              + count
              + " clients within "
              + bound
              + " of being added to the balancer (maximum connection age "
              + AGE
              + ", grace "
              + XdsTransport.CONNECTION_AGE_GRACE
              + "); it holds "
              + clientsOnQuietly(replica)
              + "; clients reconnected "
              + reconnects
              + " times; balancer connections per replica "
              + balancer.connectionsPerBackend(),
          e);
    }
  }

  /**
   * Each replica holds its own upstream session per node group it serves, one only, opened once and
   * open still: invariant 1 with replicas, which each count as one client to the control plane.
   */
  private void assertOneUpstreamStreamPerGroupPerReplica() {
    // Aged connections keep moving clients: one seen on a replica just now may be in a group whose
    // first request to the control plane is still on its way. Every (replica, group) seen gets one.
    await()
        .atMost(Duration.ofSeconds(10))
        .untilAsserted(
            () ->
                assertThat(Set.copyOf(controlPlane.streamNodeIds()))
                    .as(
                        "upstream node ids of the streams opened: every (replica, group) seen serving clients has one")
                    .containsAll(seenServing));
    List<String> opened = controlPlane.streamNodeIds();
    Map<String, Long> perNode =
        opened.stream()
            .collect(
                Collectors.groupingBy(Function.identity(), TreeMap::new, Collectors.counting()));
    assertThat(perNode.values())
        .as("upstream streams opened per (replica, group), by upstream node id: %s", perNode)
        .allMatch(count -> count == 1);
    assertThat(perNode.keySet())
        .as("upstream node ids of the streams opened")
        .allMatch(id -> id.matches("replica-[1-4]/(blue|green|red)"));
    assertThat(controlPlane.openStreamNodeIds())
        .as("upstream streams open now, by upstream node id")
        .containsExactlyInAnyOrderElementsOf(opened);
    assertThat(perNode.keySet())
        .as("the added replica's upstream sessions")
        .anyMatch(id -> id.startsWith("replica-" + (FIRST_REPLICAS + 1) + "/"));
  }

  private static String upstreamNodeId(int replica, String group) {
    return "replica-" + replica + "/" + group;
  }

  /**
   * The clients {@code replica} holds streams of, with their group, from its {@code GET /clients};
   * noted in {@link #seenServing}.
   */
  private Map<String, String> clientsOn(Replica replica) throws IOException, InterruptedException {
    HttpResponse<String> response = get(replica, "/clients");
    assertThat(response.statusCode())
        .as("%s GET /clients: %s", replica, response.body())
        .isEqualTo(200);
    Map<String, String> groups = new TreeMap<>();
    for (JsonElement stream :
        JsonParser.parseString(response.body()).getAsJsonObject().getAsJsonArray("clients")) {
      JsonObject client = stream.getAsJsonObject();
      groups.put(client.get("nodeId").getAsString(), client.get("group").getAsString());
      seenServing.add(upstreamNodeId(replica.number(), client.get("group").getAsString()));
    }
    return groups;
  }

  private Object clientsOnQuietly(Replica replica) {
    try {
      return clientsOn(replica).keySet();
    } catch (IOException | RuntimeException e) {
      return "(GET /clients failed: " + e + ")";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "(interrupted)";
    }
  }

  /** The replicas holding a stream of {@code client} now, for a failure message. */
  private String whereIs(VariantClient client) {
    List<String> on = new ArrayList<>();
    for (Replica replica : replicas) {
      Object held = clientsOnQuietly(replica);
      if (held instanceof Set<?> ids && ids.contains(client.node().getId())) {
        on.add(replica.toString());
      }
    }
    return on.isEmpty() ? "no replica (no stream open)" : String.join(" and ", on);
  }

  private HttpResponse<String> get(Replica replica, String path)
      throws IOException, InterruptedException {
    int port = path.equals("/clients") ? replica.adminPort() : replica.monitoringPort();
    return http.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
            .timeout(Duration.ofSeconds(5))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String read(Path log) {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(cannot read " + log + ": " + e + ")";
    }
  }
}
