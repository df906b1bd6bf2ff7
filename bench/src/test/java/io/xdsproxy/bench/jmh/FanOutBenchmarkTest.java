package io.xdsproxy.bench.jmh;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import com.google.protobuf.InvalidProtocolBufferException;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.downstream.xds.Clients.ClientStatus;
import io.xdsproxy.downstream.xds.Clients.TypeStatus;
import java.net.UnknownHostException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each fan-out benchmark run once, outside JMH, on a small group: it shows that what JMH times is
 * real work (every stream written a response carrying the change, as the client decodes it), not
 * how fast it is.
 */
class FanOutBenchmarkTest {

  private static final int STREAMS = 20;

  private final FanOutBenchmark benchmark = new FanOutBenchmark();
  private GroupOfStreams group;

  private GroupOfStreams connected(String variant) throws UnknownHostException {
    group = new GroupOfStreams(STREAMS);
    group.variant = variant;
    group.connect();
    return group;
  }

  @AfterEach
  void disconnect() {
    if (group != null) {
      group.disconnect();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"sotw", "delta"})
  void anEndpointChangeWritesEveryStreamTheOneChangedAssignment(String variant) throws Exception {
    connected(variant);
    long[] bytesBefore =
        group.clients().stream().mapToLong(client -> client.call().bytesWritten()).toArray();

    benchmark.endpointChange(group);

    assertThat(group.clients()).hasSize(STREAMS);
    for (int i = 0; i < STREAMS; i++) {
      EnvoyClient client = group.clients().get(i);
      assertThat(client.call().closedWith()).as("status of a call").isNull();
      assertThat(client.call().responses())
          .as("two responses to subscribe, one for the change")
          .isEqualTo(3);
      assertThat(client.call().bytesWritten() - bytesBefore[i])
          .as("bytes written for the change")
          .isEqualTo(client.call().lastResponse().length);
      assertCarriesOnly(client, TypeUrl.ENDPOINT, group.latest());
    }
    group.checkEveryStreamHasTheLatestChange();
  }

  @ParameterizedTest
  @ValueSource(strings = {"sotw", "delta"})
  void everyStreamsAckOfTheChangeIsReadAndRecorded(String variant) throws Exception {
    connected(variant);

    benchmark.endpointChangeAndAcks(group);

    String version =
        variant.equals("sotw")
            ? DiscoveryResponse.parseFrom(group.clients().get(0).call().lastResponse())
                .getVersionInfo()
            : DeltaDiscoveryResponse.parseFrom(group.clients().get(0).call().lastResponse())
                .getSystemVersionInfo();
    assertThat(version).isNotEmpty();
    for (EnvoyClient client : group.clients()) {
      assertThat(client.call().closedWith()).as("status of a call").isNull();
      assertThat(client.call().responses()).as("an ACK is not answered").isEqualTo(3);
      assertThat(client.call().requested())
          .as("the proxy read the ACK and asked for the next request")
          .isEqualTo(1);
    }
    assertThat(group.proxy().clients().statuses())
        .hasSize(STREAMS)
        .allSatisfy(
            status -> {
              TypeStatus endpoints = endpointsOf(status);
              assertThat(endpoints.ackedVersion())
                  .as("EDS version ACKed by %s", status.nodeId())
                  .isEqualTo(version);
              assertThat(endpoints.names())
                  .as("SotW: the ACK's names are the subscription")
                  .hasSize(GroupOfStreams.CLUSTERS);
            });
    group.checkEveryStreamHasTheLatestChange();
  }

  @ParameterizedTest
  @ValueSource(strings = {"sotw", "delta"})
  void aClusterChangeWritesSotwTheWholeStateAndDeltaTheOneCluster(String variant) throws Exception {
    connected(variant);

    benchmark.clusterChange(group);

    for (EnvoyClient client : group.clients()) {
      assertThat(client.call().closedWith()).as("status of a call").isNull();
      // The cluster's assignment follows it, unchanged: an Envoy warms the changed cluster until it
      // comes.
      assertThat(client.call().responses()).isEqualTo(4);
      if (variant.equals("sotw")) {
        DiscoveryResponse response =
            DiscoveryResponse.parseFrom(client.call().responseBeforeLast());
        assertThat(response.getTypeUrl()).isEqualTo(TypeUrl.CLUSTER.url());
        assertThat(response.getResourcesList())
            .as("Cluster is sent whole in SotW")
            .hasSize(GroupOfStreams.CLUSTERS)
            .contains(group.latest().body());
        DiscoveryResponse assignment = DiscoveryResponse.parseFrom(client.call().lastResponse());
        assertThat(assignment.getTypeUrl()).isEqualTo(TypeUrl.ENDPOINT.url());
        assertThat(assignment.getResourcesCount())
            .as("the changed cluster's assignment alone")
            .isEqualTo(1);
      } else {
        DeltaDiscoveryResponse response =
            DeltaDiscoveryResponse.parseFrom(client.call().responseBeforeLast());
        assertThat(response.getResourcesList())
            .extracting(resource -> resource.getResource())
            .containsExactly(group.latest().body());
        DeltaDiscoveryResponse assignment =
            DeltaDiscoveryResponse.parseFrom(client.call().lastResponse());
        assertThat(assignment.getTypeUrl()).isEqualTo(TypeUrl.ENDPOINT.url());
        assertThat(assignment.getResourcesCount())
            .as("the changed cluster's assignment alone")
            .isEqualTo(1);
      }
    }
    group.checkEveryStreamHasTheLatestChange();
  }

  /**
   * The client's last response is of {@code type} and carries {@code changed}, and nothing else.
   */
  private static void assertCarriesOnly(EnvoyClient client, TypeUrl type, XdsResource changed)
      throws InvalidProtocolBufferException {
    byte[] bytes = client.call().lastResponse();
    if (client instanceof EnvoyClient.Sotw) {
      DiscoveryResponse response = DiscoveryResponse.parseFrom(bytes);
      assertThat(response.getTypeUrl()).isEqualTo(type.url());
      assertThat(response.getResourcesList()).containsExactly(changed.body());
    } else {
      DeltaDiscoveryResponse response = DeltaDiscoveryResponse.parseFrom(bytes);
      assertThat(response.getTypeUrl()).isEqualTo(type.url());
      assertThat(response.getResourcesList())
          .extracting(Resource::getName, Resource::getResource)
          .containsExactly(tuple(changed.name(), changed.body()));
      assertThat(response.getRemovedResourcesList()).isEmpty();
    }
  }

  private static TypeStatus endpointsOf(ClientStatus status) {
    return status.types().stream()
        .filter(type -> type.typeUrl().equals(TypeUrl.ENDPOINT.url()))
        .findFirst()
        .orElseThrow(() -> new AssertionError(status.nodeId() + " has no EDS: " + status));
  }
}
