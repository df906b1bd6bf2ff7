package io.xdsproxy.bench.jmh;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.xdsproxy.bench.BenchResources;
import io.xdsproxy.core.TypeUrl;
import org.junit.jupiter.api.Test;

/**
 * The ACK benchmarks run once, outside JMH: both read the whole ACK, and the proxy's takes its
 * cached path.
 */
class AckBenchmarkTest {

  private final AckBenchmark benchmark = new AckBenchmark();

  @Test
  void theProxyReadsTheSameAckAsProtobufWithTheNamesItAlreadyHeld() throws Exception {
    benchmark.encodeAck();

    DiscoveryRequest read = benchmark.sotwEdsAck();
    DiscoveryRequest plain = benchmark.sotwEdsAckPlainProtobuf();

    assertThat(read.getResourceNamesList())
        .containsExactlyElementsOf(BenchResources.clusterNames(GroupOfStreams.CLUSTERS));
    assertThat(read.getTypeUrl()).isEqualTo(TypeUrl.ENDPOINT.url());
    assertThat(read.getNode().getId()).isEqualTo("client-0");
    assertThat(read.getResponseNonce()).isEqualTo("2");
    assertThat(read).isEqualTo(plain).isEqualTo(DiscoveryRequest.parseFrom(benchmark.ack()));
    assertThat(read.getResourceNamesList().get(999))
        .as("names not decoded again: the strings of the earlier read")
        .isSameAs(benchmark.sotwEdsAck().getResourceNamesList().get(999))
        .isNotSameAs(plain.getResourceNamesList().get(999));
    assertThat(benchmark.sotwEdsAckOfItsCall())
        .as("read for its call, which held the same names")
        .isEqualTo(plain);
    assertThat(benchmark.sotwEdsAckOfItsCall().getResourceNamesList())
        .isSameAs(read.getResourceNamesList());
  }
}
