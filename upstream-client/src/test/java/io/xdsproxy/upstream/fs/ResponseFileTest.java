package io.xdsproxy.upstream.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.Any;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.upstream.fs.ResponseFile.Contents;
import io.xdsproxy.upstream.fs.ResponseFile.Format;
import io.xdsproxy.upstream.fs.ResponseFile.InvalidFileException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Files the fuzz tests found read wrongly, read as they should be. */
class ResponseFileTest {

  @TempDir Path dir;

  @Test
  void aYamlAliasInsideTheCollectionItNamesIsRefusedAsCyclic() throws Exception {
    Path file = Files.writeString(dir.resolve("clusters.yaml"), "version_info: &a [*a]\n");

    // It used to overflow the stack writing the tree out as JSON: an Error, which ended the
    // directory's scan.
    assertThatThrownBy(() -> ResponseFile.read(file, Format.YAML))
        .isInstanceOf(InvalidFileException.class)
        .hasMessageContaining("cyclic");
  }

  @Test
  void yamlAliasesThatExpandFarPastTheFileAreRefused() throws Exception {
    StringBuilder yaml = new StringBuilder("a0: &a0 [x, x, x, x, x, x, x]\n");
    for (int level = 1; level < 7; level++) {
      yaml.append("a").append(level).append(": &a").append(level).append(" [");
      yaml.append(String.join(", ", Collections.nCopies(7, "*a" + (level - 1)))).append("]\n");
    }
    Path file = Files.writeString(dir.resolve("clusters.yaml"), yaml);

    assertThatThrownBy(() -> ResponseFile.read(file, Format.YAML))
        .isInstanceOf(InvalidFileException.class)
        .hasMessageContaining("expand");
  }

  @Test
  void aFileWithoutTypeUrlTakesItsTypeFromInsideResourceWrappers() throws Exception {
    Cluster cluster = Cluster.newBuilder().setName("backend").build();
    DiscoveryResponse response =
        DiscoveryResponse.newBuilder()
            .addResources(
                Any.pack(
                    Resource.newBuilder()
                        .setName("backend")
                        .setResource(Any.pack(cluster))
                        .build()))
            .build();
    Path file =
        Files.writeString(
            dir.resolve("clusters.json"),
            JsonFormat.printer().usingTypeRegistry(ApiTypes.json()).print(response));

    Contents contents = ResponseFile.read(file, Format.JSON);

    assertThat(contents.type()).isEqualTo(TypeUrl.CLUSTER);
    assertThat(contents.resources()).extracting(XdsResource::name).containsExactly("backend");
  }
}
