package io.xdsproxy.upstream.fs;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.gson.Gson;
import com.google.protobuf.Any;
import com.google.protobuf.Duration;
import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.Resource;
import io.xdsproxy.core.ApiTypes;
import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.XdsResource;
import io.xdsproxy.upstream.fs.ResponseFile.Contents;
import io.xdsproxy.upstream.fs.ResponseFile.Format;
import io.xdsproxy.upstream.fs.ResponseFile.InvalidFileException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.yaml.snakeyaml.Yaml;

/**
 * The filesystem source's file parser under fuzzing: whatever a file holds, reading it yields
 * resources the source can serve or an {@link InvalidFileException} the source logs ("is not
 * served: …"), never another exception that would end the scan of the whole directory; and
 * resources written in any of the four formats read back as they were.
 *
 * <p>Without {@code JAZZER_FUZZ} only the inputs under {@code ResponseFileFuzzTestInputs/} run.
 */
class ResponseFileFuzzTest {

  /**
   * Inputs beyond this are cut off: a parser must be fast on kilobytes, and the source caps files
   * anyway.
   */
  private static final int MAX_INPUT = 64 * 1024;

  private static final Map<Format, String> EXTENSIONS =
      Map.of(
          Format.JSON,
          ".json",
          Format.YAML,
          ".yaml",
          Format.TEXT,
          ".textproto",
          Format.BINARY,
          ".pb");

  private static final Path DIRECTORY = temporaryDirectory();

  @FuzzTest(maxDuration = "8s")
  void anyFileIsReadAsResourcesOfItsTypeOrRefusedWithAReason(FuzzedDataProvider data)
      throws IOException {
    Format format = data.pickValue(Format.values());
    byte[] bytes = data.consumeRemainingAsBytes();
    Path file =
        write(format, bytes.length > MAX_INPUT ? java.util.Arrays.copyOf(bytes, MAX_INPUT) : bytes);
    assertThat(ResponseFile.formatOf(file)).contains(format);
    Contents contents;
    try {
      contents = ResponseFile.read(file, format);
    } catch (InvalidFileException e) {
      assertThat(e.getMessage()).as("the reason logged for a file that is not served").isNotBlank();
      return;
    }
    Set<String> names = new HashSet<>();
    for (XdsResource resource : contents.resources()) {
      assertThat(names.add(resource.name()))
          .as("resource names of one file are unique: %s", resource.name())
          .isTrue();
      assertThat(resource.name()).isNotEmpty();
      assertThat(resource.body().getTypeUrl())
          .as("every resource is of the file's type")
          .isEqualTo(contents.type().url());
    }
  }

  @FuzzTest(maxDuration = "8s")
  void resourcesWrittenInEachFormatReadBackTheSame(FuzzedDataProvider data) throws Exception {
    TypeUrl type =
        data.pickValue(List.of(TypeUrl.CLUSTER, TypeUrl.LISTENER, TypeUrl.ENDPOINT, TypeUrl.ROUTE));
    boolean wrapped = data.consumeBoolean();
    boolean typeUrlGiven = data.consumeBoolean();
    Map<String, Message> resources = new LinkedHashMap<>();
    int count = data.consumeInt(1, 8);
    for (int i = 0; i < count && data.remainingBytes() > 0; i++) {
      String name = printable(data.consumeString(40));
      if (!name.isEmpty()) {
        resources.putIfAbsent(
            name,
            resource(
                type,
                name,
                printable(data.consumeString(40)),
                data.consumeLong(0, 315_576_000_000L),
                data.consumeInt(0, 999_999_999)));
      }
    }
    if (resources.isEmpty()) {
      return;
    }
    DiscoveryResponse.Builder response =
        DiscoveryResponse.newBuilder().setVersionInfo(printable(data.consumeString(20)));
    if (typeUrlGiven) {
      response.setTypeUrl(type.url());
    }
    resources.forEach(
        (name, body) ->
            response.addResources(
                wrapped
                    ? Any.pack(
                        Resource.newBuilder().setName(name).setResource(Any.pack(body)).build())
                    : Any.pack(body)));

    for (Format format : Format.values()) {
      Path file = write(format, encode(response.build(), format));
      Contents contents;
      try {
        contents = ResponseFile.read(file, format);
      } catch (InvalidFileException e) {
        throw new AssertionError(
            format + " written from " + response.build() + " does not read back: " + e.getMessage(),
            e);
      }
      assertThat(contents.type()).as(format.toString()).isEqualTo(type);
      assertThat(contents.resources())
          .extracting(XdsResource::name)
          .as(format.toString())
          .containsExactlyElementsOf(resources.keySet());
      List<Message> bodies = new ArrayList<>();
      for (XdsResource resource : contents.resources()) {
        bodies.add(resource.body().unpack(resources.get(resource.name()).getClass()));
      }
      assertThat(bodies).as(format.toString()).containsExactlyElementsOf(resources.values());
    }
  }

  private static Message resource(TypeUrl type, String name, String text, long seconds, int nanos) {
    Duration duration = Duration.newBuilder().setSeconds(seconds).setNanos(nanos).build();
    if (type.equals(TypeUrl.CLUSTER)) {
      return Cluster.newBuilder()
          .setName(name)
          .setAltStatName(text)
          .setConnectTimeout(duration)
          .build();
    } else if (type.equals(TypeUrl.LISTENER)) {
      return Listener.newBuilder()
          .setName(name)
          .setStatPrefix(text)
          .setListenerFiltersTimeout(duration)
          .build();
    } else if (type.equals(TypeUrl.ENDPOINT)) {
      return ClusterLoadAssignment.newBuilder()
          .setClusterName(name)
          .setPolicy(ClusterLoadAssignment.Policy.newBuilder().setEndpointStaleAfter(duration))
          .build();
    }
    return RouteConfiguration.newBuilder().setName(name).addInternalOnlyHeaders(text).build();
  }

  private static byte[] encode(DiscoveryResponse response, Format format) throws IOException {
    return switch (format) {
      case BINARY -> response.toByteArray();
      case JSON ->
          JsonFormat.printer()
              .usingTypeRegistry(ApiTypes.json())
              .print(response)
              .getBytes(StandardCharsets.UTF_8);
      case TEXT ->
          TextFormat.printer()
              .usingTypeRegistry(ApiTypes.text())
              .printToString(response)
              .getBytes(StandardCharsets.UTF_8);
      // YAML as a person would write it from the JSON: the same tree, in block style.
      case YAML ->
          new Yaml()
              .dump(
                  new Gson()
                      .fromJson(
                          JsonFormat.printer().usingTypeRegistry(ApiTypes.json()).print(response),
                          Object.class))
              .getBytes(StandardCharsets.UTF_8);
    };
  }

  /**
   * {@code text} without surrogates and control characters: the fuzzer's strings may hold unpaired
   * surrogates, which no UTF-8 file can carry, so they could not read back whatever the parser did.
   */
  private static String printable(String text) {
    StringBuilder kept = new StringBuilder(text.length());
    text.codePoints()
        .filter(
            c ->
                !Character.isISOControl(c)
                    && Character.isDefined(c)
                    && Character.getType(c) != Character.SURROGATE)
        .forEach(kept::appendCodePoint);
    return kept.toString();
  }

  private static Path write(Format format, byte[] bytes) {
    try {
      return Files.write(DIRECTORY.resolve("resources" + EXTENSIONS.get(format)), bytes);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Path temporaryDirectory() {
    try {
      Path directory = Files.createTempDirectory("response-file-fuzz");
      // Deleted last to first: the files each input is written to, then the directory.
      directory.toFile().deleteOnExit();
      EXTENSIONS
          .values()
          .forEach(extension -> directory.resolve("resources" + extension).toFile().deleteOnExit());
      return directory;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
