package io.xdsproxy.upstream.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.Any;
import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.NodeGroupKey;
import io.xdsproxy.core.ResourceUpdate;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.UpstreamSource.UpstreamSession;
import io.xdsproxy.core.XdsResource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileSystemSourceTest {

  private static final Duration WAIT = Duration.ofSeconds(5);

  @TempDir Path dir;

  private FileSystemSource source;

  /** The last complete state the session announced, per type. */
  private final Map<TypeUrl, List<XdsResource>> served = new ConcurrentHashMap<>();

  @AfterEach
  void close() {
    if (source != null) {
      source.close();
    }
  }

  private UpstreamSession open() throws Exception {
    source = new FileSystemSource(dir);
    return source.open(
        new NodeGroupKey("g"),
        Node.newBuilder().setId("n").setCluster("g").build(),
        "address 192.0.2.1",
        this::record);
  }

  private void record(ResourceUpdate update) {
    assertThat(update.complete()).as("a directory always gives a type's whole state").isTrue();
    served.put(update.type(), update.resources());
  }

  private List<String> names(TypeUrl type) {
    return served.getOrDefault(type, List.of()).stream().map(XdsResource::name).toList();
  }

  private static DiscoveryResponse response(TypeUrl type, Message... resources) {
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder().setTypeUrl(type.url()).setVersionInfo("1");
    for (Message resource : resources) {
      response.addResources(Any.pack(resource));
    }
    return response.build();
  }

  private static Cluster cluster(String name) {
    return Cluster.newBuilder().setName(name).setType(Cluster.DiscoveryType.EDS).build();
  }

  private void writeJson(String file, DiscoveryResponse response) throws Exception {
    Files.writeString(
        dir.resolve(file), JsonFormat.printer().usingTypeRegistry(ApiTypes.json()).print(response));
  }

  @Test
  void everyFormatIsReadByItsExtension() throws Exception {
    writeJson("clusters.json", response(TypeUrl.CLUSTER, cluster("from-json")));
    Files.writeString(
        dir.resolve("endpoints.yaml"),
        """
        resources:
        - "@type": type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment
          cluster_name: from-yaml
        """);
    Files.writeString(
        dir.resolve("routes.textproto"),
        TextFormat.printer()
            .usingTypeRegistry(ApiTypes.text())
            .printToString(
                response(
                    TypeUrl.ROUTE, RouteConfiguration.newBuilder().setName("from-text").build())));
    Files.write(
        dir.resolve("listeners.pb"),
        response(
                TypeUrl.LISTENER,
                io.envoyproxy.envoy.config.listener.v3.Listener.newBuilder()
                    .setName("from-binary")
                    .build())
            .toByteArray());
    Files.writeString(dir.resolve("README.md"), "not a resource file: ignored");

    open();

    await()
        .atMost(WAIT)
        .untilAsserted(
            () -> {
              assertThat(names(TypeUrl.CLUSTER)).containsExactly("from-json");
              assertThat(names(TypeUrl.ENDPOINT))
                  .as("type taken from the resources")
                  .containsExactly("from-yaml");
              assertThat(names(TypeUrl.ROUTE)).containsExactly("from-text");
              assertThat(names(TypeUrl.LISTENER)).containsExactly("from-binary");
            });
  }

  @Test
  void anEditANewFileAndARemovedFileReachTheSession() throws Exception {
    writeJson("a.json", response(TypeUrl.CLUSTER, cluster("a")));
    open();
    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).equals(List.of("a")));

    writeJson("a.json", response(TypeUrl.CLUSTER, cluster("a2")));
    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).equals(List.of("a2")));

    writeJson("b.json", response(TypeUrl.CLUSTER, cluster("b")));
    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).size() == 2);
    assertThat(names(TypeUrl.CLUSTER)).containsExactlyInAnyOrder("a2", "b");

    Files.delete(dir.resolve("a.json"));
    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).equals(List.of("b")));

    Files.delete(dir.resolve("b.json"));
    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).isEmpty());
  }

  @Test
  void aFileThatStopsParsingKeepsItsLastGoodContentsUntilItIsFixed() throws Exception {
    writeJson("clusters.json", response(TypeUrl.CLUSTER, cluster("good")));
    writeJson("other.json", response(TypeUrl.CLUSTER, cluster("other")));
    open();
    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).size() == 2);

    Files.writeString(dir.resolve("clusters.json"), "{ \"resources\": [ { \"@type\": ");
    writeJson("other.json", response(TypeUrl.CLUSTER, cluster("other2")));
    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).contains("other2"));
    assertThat(names(TypeUrl.CLUSTER))
        .as("the broken file's last good cluster stays")
        .containsExactlyInAnyOrder("good", "other2");

    writeJson("clusters.json", response(TypeUrl.CLUSTER, cluster("fixed")));
    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).contains("fixed"));
    assertThat(names(TypeUrl.CLUSTER)).containsExactlyInAnyOrder("fixed", "other2");
  }

  @Test
  void aBrokenFileNeverServesAnythingAndTheRestIsServed() throws Exception {
    Files.writeString(dir.resolve("bad.yaml"), "resources: [ {");
    // A resource of another type than the response's: refused like an upstream's would be.
    writeJson(
        "mixed.json",
        response(TypeUrl.CLUSTER, ClusterLoadAssignment.newBuilder().setClusterName("x").build()));
    writeJson("good.json", response(TypeUrl.CLUSTER, cluster("good")));

    open();

    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).equals(List.of("good")));
    assertThat(served).containsOnlyKeys(TypeUrl.CLUSTER);
  }

  @Test
  void aNameInTwoFilesIsServedOnceFromTheFirstFile() throws Exception {
    writeJson(
        "1.json",
        response(
            TypeUrl.CLUSTER,
            cluster("dup").toBuilder()
                .setConnectTimeout(com.google.protobuf.util.Durations.fromSeconds(1))
                .build()));
    writeJson("2.json", response(TypeUrl.CLUSTER, cluster("dup"), cluster("other")));

    open();

    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).size() == 2);
    XdsResource dup =
        served.get(TypeUrl.CLUSTER).stream()
            .filter(r -> r.name().equals("dup"))
            .findFirst()
            .orElseThrow();
    assertThat(dup.body().unpack(Cluster.class).getConnectTimeout().getSeconds()).isEqualTo(1);
  }

  @Test
  void aSessionOpenedLaterGetsTheCurrentState() throws Exception {
    writeJson("clusters.json", response(TypeUrl.CLUSTER, cluster("a")));
    open();
    await().atMost(WAIT).until(() -> names(TypeUrl.CLUSTER).equals(List.of("a")));

    Map<TypeUrl, List<XdsResource>> second = new ConcurrentHashMap<>();
    source.open(
        new NodeGroupKey("g2"),
        Node.getDefaultInstance(),
        "address 192.0.2.1",
        update -> second.put(update.type(), update.resources()));

    await().atMost(WAIT).until(() -> second.containsKey(TypeUrl.CLUSTER));
    assertThat(second.get(TypeUrl.CLUSTER)).extracting(XdsResource::name).containsExactly("a");
  }
}
