package io.xdsproxy.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * deploy/Dockerfile builds, proved without a Docker daemon (none runs here, nor in CI): the build
 * context is made as BuildKit makes it, with {@code Dockerfile.dockerignore}'s rules; the build
 * stage's COPYs are replayed into a directory in order, and its Maven commands run there as the
 * image's build runs them (offline, from this build's local repository); the files the final stage
 * copies must then exist. What a daemon would add (pulling the pinned base images, the JRE running
 * the jar) cannot be run here: README "Container image" says how an operator builds and checks it.
 *
 * <p>Also: the base images are pinned by digest, the image carries OCI labels with its version and
 * revision, and the jar carries a CycloneDX SBOM of exactly the libraries it is made of.
 */
class DockerImageTest {

  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final Path DOCKERFILE = ROOT.resolve("deploy/Dockerfile");
  private static final Path DOCKERIGNORE = ROOT.resolve("deploy/Dockerfile.dockerignore");
  private static final Pattern PINNED =
      Pattern.compile("[a-z0-9./-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}");
  private static final Pattern ARG_REFERENCE = Pattern.compile("\\$\\{?([A-Za-z_][A-Za-z0-9_]*)}?");

  /** An instruction: its keyword, upper case, and its arguments with continuations joined. */
  record Instruction(String keyword, String arguments) {
    List<String> words() {
      return List.of(arguments.split("\\s+"));
    }
  }

  /** A stage: its base (ARGs substituted), its name if it has one, and its instructions. */
  record Stage(String base, String name, List<Instruction> instructions) {
    List<Instruction> all(String keyword) {
      return instructions.stream()
          .filter(instruction -> instruction.keyword().equals(keyword))
          .toList();
    }

    /**
     * The ARGs declared in this stage with their defaults: a global ARG declared again without one
     * keeps the global default, as Docker does.
     */
    Map<String, String> args() {
      Map<String, String> args = new HashMap<>();
      all("ARG")
          .forEach(
              arg -> {
                String[] parts = arg.arguments().split("=", 2);
                args.put(
                    parts[0], parts.length > 1 ? parts[1] : globalArgs.getOrDefault(parts[0], ""));
              });
      return args;
    }
  }

  private static List<Stage> stages;
  private static Map<String, String> globalArgs;

  /** A Dockerfile's instructions, with comments left out and continued lines joined. */
  static List<Instruction> instructions(Path dockerfile) throws IOException {
    List<Instruction> instructions = new ArrayList<>();
    StringBuilder line = new StringBuilder();
    for (String raw : Files.readAllLines(dockerfile)) {
      String trimmed = raw.strip();
      if (trimmed.startsWith("#") || trimmed.isEmpty()) {
        continue;
      }
      if (trimmed.endsWith("\\")) {
        line.append(trimmed, 0, trimmed.length() - 1).append(' ');
        continue;
      }
      line.append(trimmed);
      String[] parts = line.toString().split("\\s+", 2);
      instructions.add(
          new Instruction(parts[0].toUpperCase(), parts.length > 1 ? parts[1].strip() : ""));
      line.setLength(0);
    }
    return instructions;
  }

  @BeforeAll
  static void readDockerfile() throws IOException {
    List<Instruction> instructions = instructions(DOCKERFILE);
    globalArgs = new HashMap<>();
    stages = new ArrayList<>();
    List<Instruction> current = null;
    for (Instruction instruction : instructions) {
      if (instruction.keyword().equals("FROM")) {
        List<String> words = instruction.words();
        String base = substitute(words.get(0), globalArgs);
        String name =
            words.size() == 3 && words.get(1).equalsIgnoreCase("AS") ? words.get(2) : null;
        current = new ArrayList<>();
        stages.add(new Stage(base, name, current));
      } else if (current == null) {
        assertThat(instruction.keyword()).as("before the first FROM, only ARG").isEqualTo("ARG");
        String[] parts = instruction.arguments().split("=", 2);
        globalArgs.put(parts[0], parts.length > 1 ? parts[1] : "");
      } else {
        current.add(instruction);
      }
    }
  }

  private static String substitute(String text, Map<String, String> args) {
    Matcher reference = ARG_REFERENCE.matcher(text);
    StringBuilder out = new StringBuilder();
    while (reference.find()) {
      assertThat(args)
          .as("ARG %s, used in '%s'", reference.group(1), text)
          .containsKey(reference.group(1));
      reference.appendReplacement(out, Matcher.quoteReplacement(args.get(reference.group(1))));
    }
    return reference.appendTail(out).toString();
  }

  private static Stage buildStage() {
    return stages.get(0);
  }

  private static Stage finalStage() {
    return stages.get(stages.size() - 1);
  }

  @Test
  void theRecipeBuildsTheJarAndItsSbomFromWhatTheContextLetsThrough(@TempDir Path work)
      throws Exception {
    Set<String> context = context();
    Stage build = buildStage();
    Path stage = work.resolve("src");
    String workdir = build.all("WORKDIR").get(0).arguments();
    assertThat(workdir).as("the build stage's WORKDIR").isEqualTo("/src");
    Map<String, String> args = new HashMap<>(globalArgs);
    args.putAll(build.args());
    int mavenRuns = 0;
    for (Instruction instruction : build.instructions()) {
      switch (instruction.keyword()) {
        case "COPY" -> copyFromContext(instruction, context, stage);
        case "RUN" -> {
          String command = substitute(instruction.arguments(), args);
          assertThat(command).as("a RUN of the build stage").startsWith("mvn ");
          runMaven(command, stage, work.resolve("maven-" + ++mavenRuns + ".log"));
        }
        case "WORKDIR", "ARG" -> {}
        default ->
            throw new AssertionError(
                "the build stage's " + instruction + " is not replayed by this test");
      }
    }
    assertThat(mavenRuns).as("Maven runs in the build stage").isEqualTo(2);

    List<String> fromBuild = new ArrayList<>();
    for (Instruction copy : finalStage().all("COPY")) {
      List<String> words = copy.words();
      if (words.get(0).startsWith("--from=")) {
        assertThat(words.get(0)).isEqualTo("--from=" + build.name());
        String source = words.get(1);
        assertThat(source)
            .as("what the final stage takes from the build stage")
            .startsWith(workdir + "/");
        Path made = stage.resolve(source.substring(workdir.length() + 1));
        assertThat(made).as("%s, made by the build stage", source).isRegularFile();
        fromBuild.add(source);
      } else {
        String source = words.get(words.size() - 2);
        assertThat(context)
            .as("COPY %s: files of the build context", source)
            .anyMatch(file -> file.equals(source) || file.startsWith(source + "/"));
      }
    }
    assertThat(fromBuild)
        .as("the jar and its SBOM")
        .containsExactly(
            "/src/proxy-app/target/xds-proxy.jar",
            "/src/proxy-app/target/classes/META-INF/sbom/xds-proxy.cdx.json");

    Path jar = stage.resolve("proxy-app/target/xds-proxy.jar");
    try (JarFile built = new JarFile(jar.toFile())) {
      assertThat(built.getManifest().getMainAttributes().getValue("Main-Class"))
          .isEqualTo(Main.class.getName());
      assertThat(built.getEntry("META-INF/sbom/xds-proxy.cdx.json"))
          .as("the SBOM inside the jar")
          .isNotNull();
    }
    Process help =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar",
                jar.toString(),
                "--help")
            .redirectErrorStream(true)
            .start();
    String output = new String(help.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(help.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(help.exitValue()).as("the built jar's --help: %s", output).isZero();
    assertThat(output).contains("usage: java -jar xds-proxy.jar");
  }

  @Test
  void baseImagesArePinnedByDigestAndTheFinalStageRunsTheJarAsNonRootOnTheDefaultPorts() {
    assertThat(stages).as("stages").hasSize(2);
    for (Stage stage : stages) {
      assertThat(stage.base()).as("a FROM's image, its ARGs' defaults substituted").matches(PINNED);
    }
    assertThat(buildStage().base()).startsWith("maven:3.9-eclipse-temurin-17@");
    assertThat(finalStage().base()).startsWith("eclipse-temurin:17-jre@");

    List<Instruction> users = finalStage().all("USER");
    assertThat(users).isNotEmpty();
    assertThat(users.get(users.size() - 1).arguments().split(":")[0])
        .as("USER")
        .matches("[1-9][0-9]*");

    Set<Integer> exposed =
        finalStage().all("EXPOSE").stream()
            .flatMap(expose -> expose.words().stream())
            .map(Integer::valueOf)
            .collect(Collectors.toSet());
    assertThat(exposed)
        .as("EXPOSE: xDS and monitoring; admin HTTP is on the loopback only")
        .containsExactlyInAnyOrder(
            ProxyConfig.DEFAULTS.xdsPort(), ProxyConfig.DEFAULTS.monitoringPort());

    String workdir = finalStage().all("WORKDIR").get(0).arguments();
    Map<String, String> copies = new LinkedHashMap<>();
    finalStage()
        .all("COPY")
        .forEach(
            copy ->
                copies.put(
                    copy.words().get(copy.words().size() - 2),
                    copy.words().get(copy.words().size() - 1)));
    String jar = copies.get("/src/proxy-app/target/xds-proxy.jar");
    assertThat(jar).as("where the image puts the jar").isNotNull();
    assertThat(copies.get("deploy/examples/resources"))
        .as("the example resources, at the default resources-dir")
        .isEqualTo(Path.of(workdir).resolve(ProxyConfig.DEFAULTS.resourcesDir()).toString());

    List<String> entrypoint = new ArrayList<>();
    JsonParser.parseString(finalStage().all("ENTRYPOINT").get(0).arguments())
        .getAsJsonArray()
        .forEach(word -> entrypoint.add(word.getAsString()));
    assertThat(entrypoint.get(0)).isEqualTo("java");
    assertThat(entrypoint.subList(entrypoint.indexOf("-jar"), entrypoint.size()))
        .containsExactly("-jar", jar);
    assertThat(entrypoint).anySatisfy(flag -> assertThat(flag).startsWith("-XX:MaxRAMPercentage="));
  }

  @Test
  void theImageIsLabelledWithTheProjectsVersionAndTheRevisionItWasBuiltFrom() throws IOException {
    Map<String, String> args = finalStage().args();
    Map<String, String> labels = new HashMap<>();
    Matcher label =
        Pattern.compile("([a-z.]+)=\"([^\"]*)\"")
            .matcher(
                finalStage().all("LABEL").stream()
                    .map(Instruction::arguments)
                    .collect(Collectors.joining(" ")));
    while (label.find()) {
      labels.put(label.group(1), label.group(2));
    }
    assertThat(labels)
        .containsKeys(
            "org.opencontainers.image.title",
            "org.opencontainers.image.description",
            "org.opencontainers.image.version",
            "org.opencontainers.image.revision",
            "org.opencontainers.image.base.name");
    assertThat(labels.get("org.opencontainers.image.version")).isEqualTo("${VERSION}");
    assertThat(labels.get("org.opencontainers.image.revision")).isEqualTo("${REVISION}");
    Matcher version =
        Pattern.compile("<version>([^<]+)</version>")
            .matcher(Files.readString(ROOT.resolve("pom.xml")));
    assertThat(version.find()).isTrue();
    assertThat(args)
        .as("VERSION's default, the pom's version")
        .containsEntry("VERSION", version.group(1));
    Map<String, String> all = new HashMap<>(globalArgs);
    all.putAll(args);
    assertThat(substitute(labels.get("org.opencontainers.image.base.name"), all))
        .isEqualTo(finalStage().base());
    assertThat(buildStage().all("RUN").get(buildStage().all("RUN").size() - 1).arguments())
        .as("the build is told the revision, as the context has no .git")
        .contains("-Dxds.revision=${REVISION}");
  }

  /**
   * The SBOM this build made (before the tests, as the image's build makes it) names exactly the
   * libraries the jar is made of, at the versions this module's own classpath has: test libraries
   * are not in it and none of the jar's is missing.
   */
  @Test
  void theSbomListsTheRuntimeLibrariesAtTheVersionsTheBuildUses() throws IOException {
    assumeFalse(
        "[true]".equals(System.getProperty("maven.offline")),
        "the SBOM plugin runs only online: `mvn -o` makes none");
    JsonObject sbom =
        JsonParser.parseString(
                Files.readString(Path.of("target/classes/META-INF/sbom/xds-proxy.cdx.json")))
            .getAsJsonObject();
    assertThat(sbom.get("bomFormat").getAsString()).isEqualTo("CycloneDX");
    assertThat(
            sbom.getAsJsonObject("metadata").getAsJsonObject("component").get("name").getAsString())
        .isEqualTo("proxy-app");
    Map<String, String> listed = new HashMap<>();
    for (JsonElement element : sbom.getAsJsonArray("components")) {
      JsonObject component = element.getAsJsonObject();
      listed.put(
          component.get("group").getAsString() + ":" + component.get("name").getAsString(),
          component.get("version").getAsString());
      assertThat(component.has("purl")).isTrue();
    }
    assertThat(listed)
        .containsKeys(
            "io.grpc:grpc-netty",
            "io.netty:netty-codec-http2",
            "com.google.protobuf:protobuf-java",
            "io.envoyproxy.controlplane:api",
            "com.github.ben-manes.caffeine:caffeine",
            "io.micrometer:micrometer-registry-prometheus",
            "io.xdsproxy:proxy-core",
            "io.xdsproxy:upstream-client",
            "io.xdsproxy:downstream-server");
    assertThat(listed)
        .as("test libraries are not shipped")
        .doesNotContainKeys(
            "org.junit.jupiter:junit-jupiter-api",
            "org.assertj:assertj-core",
            "org.bouncycastle:bcpkix-jdk18on",
            "io.grpc:grpc-xds",
            "io.envoyproxy.controlplane:server");

    // Every library of the SBOM is on this module's classpath at the version the SBOM gives.
    Map<String, String> onClasspath = new HashMap<>();
    Pattern inRepository =
        Pattern.compile(".*/repository/(.+)/([^/]+)/([^/]+)/\\2-\\3(?:-[^/]*)?\\.jar");
    for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
      Matcher jar = inRepository.matcher(entry.replace('\\', '/'));
      if (jar.matches()) {
        onClasspath.put(jar.group(1).replace('/', '.') + ":" + jar.group(2), jar.group(3));
      }
    }
    listed.forEach(
        (library, version) -> {
          if (!library.startsWith("io.xdsproxy:")) {
            assertThat(onClasspath)
                .as("the classpath's %s", library)
                .containsEntry(library, version);
          }
        });
  }

  @Test
  void theIgnoreFileLeavesOutBuildOutputAndBenchButForItsPom() throws IOException {
    DockerIgnore ignore = DockerIgnore.read(DOCKERIGNORE);

    assertThat(ignore.excludes("proxy-app/target/xds-proxy.jar")).isTrue();
    assertThat(ignore.excludes(".git/HEAD")).isTrue();
    assertThat(ignore.excludes("bench/src/main/java/io/xdsproxy/bench/Soak.java")).isTrue();
    assertThat(ignore.excludes("bench/pom.xml")).isFalse();
    assertThat(ignore.excludes("proxy-app/src/main/java/io/xdsproxy/app/Main.java")).isFalse();
    assertThat(ignore.excludes("deploy/examples/resources/clusters.yaml")).isFalse();
  }

  /** The rules of a .dockerignore, matched as BuildKit matches them (moby/patternmatcher). */
  record DockerIgnore(List<Pattern> patterns, List<Boolean> negated, List<String> texts) {

    static DockerIgnore read(Path file) throws IOException {
      List<Pattern> patterns = new ArrayList<>();
      List<Boolean> negated = new ArrayList<>();
      List<String> texts = new ArrayList<>();
      for (String raw : Files.readAllLines(file)) {
        String line = raw.strip();
        if (line.isEmpty() || line.startsWith("#")) {
          continue;
        }
        boolean not = line.startsWith("!");
        String text = Path.of(not ? line.substring(1).strip() : line).normalize().toString();
        text = text.startsWith("/") ? text.substring(1) : text;
        patterns.add(Pattern.compile(regex(text)));
        negated.add(not);
        texts.add(text);
      }
      return new DockerIgnore(patterns, negated, texts);
    }

    /** {@code **} any number of directories, {@code *} and {@code ?} within one name. */
    private static String regex(String pattern) {
      StringBuilder regex = new StringBuilder("^");
      for (int i = 0; i < pattern.length(); i++) {
        char c = pattern.charAt(i);
        if (pattern.startsWith("**/", i)) {
          regex.append("(?:.*/)?");
          i += 2;
        } else if (pattern.startsWith("**", i)) {
          regex.append(".*");
          i++;
        } else if (c == '*') {
          regex.append("[^/]*");
        } else if (c == '?') {
          regex.append("[^/]");
        } else {
          regex.append(Pattern.quote(String.valueOf(c)));
        }
      }
      return regex.append('$').toString();
    }

    /**
     * Left out: the last rule matching the path or one of its parent directories is not a "!" rule.
     */
    boolean excludes(String path) {
      boolean excluded = false;
      for (int i = 0; i < patterns.size(); i++) {
        if (matchesOrParentMatches(patterns.get(i), path)) {
          excluded = !negated.get(i);
        }
      }
      return excluded;
    }

    private static boolean matchesOrParentMatches(Pattern pattern, String path) {
      String prefix = path;
      while (true) {
        if (pattern.matcher(prefix).matches()) {
          return true;
        }
        int slash = prefix.lastIndexOf('/');
        if (slash < 0) {
          return false;
        }
        prefix = prefix.substring(0, slash);
      }
    }

    /** A directory can be skipped whole when it is left out and no "!" rule reaches inside it. */
    boolean skipsDirectory(String directory) {
      if (!excludes(directory)) {
        return false;
      }
      for (int i = 0; i < texts.size(); i++) {
        if (negated.get(i) && texts.get(i).startsWith(directory + "/")) {
          return false;
        }
      }
      return true;
    }
  }

  /** The files of the build context: the repository's, less what the ignore file leaves out. */
  private static Set<String> context() throws IOException {
    DockerIgnore ignore = DockerIgnore.read(DOCKERIGNORE);
    Set<String> files = new TreeSet<>();
    walk(ROOT, ignore, files);
    return files;
  }

  private static void walk(Path directory, DockerIgnore ignore, Set<String> files)
      throws IOException {
    try (Stream<Path> entries = Files.list(directory)) {
      for (Path entry : entries.toList()) {
        String relative = ROOT.relativize(entry).toString().replace('\\', '/');
        if (Files.isDirectory(entry)) {
          if (!ignore.skipsDirectory(relative)) {
            walk(entry, ignore, files);
          }
        } else if (!ignore.excludes(relative)) {
          files.add(relative);
        }
      }
    }
  }

  /**
   * A COPY from the context into the build stage, whose WORKDIR is {@code stage}: a file, or a
   * directory's contents.
   */
  private static void copyFromContext(Instruction copy, Set<String> context, Path stage)
      throws IOException {
    List<String> words = copy.words();
    assertThat(words).as("%s: one source and a destination", copy).hasSize(2);
    String source = words.get(0);
    String destination = words.get(1);
    if (context.contains(source)) {
      Path target =
          destination.endsWith("/") || destination.equals(".")
              ? stage.resolve(destination).resolve(Path.of(source).getFileName())
              : stage.resolve(destination);
      Files.createDirectories(target.getParent());
      Files.copy(ROOT.resolve(source), target, StandardCopyOption.REPLACE_EXISTING);
      return;
    }
    List<String> under = context.stream().filter(file -> file.startsWith(source + "/")).toList();
    assertThat(under)
        .as(
            "%s: '%s' in the build context (missing, or left out by %s)",
            copy, source, DOCKERIGNORE.getFileName())
        .isNotEmpty();
    for (String file : under) {
      Path target = stage.resolve(destination).resolve(file.substring(source.length() + 1));
      Files.createDirectories(target.getParent());
      Files.copy(ROOT.resolve(file), target, StandardCopyOption.REPLACE_EXISTING);
    }
  }

  /**
   * A RUN's Maven command, run in {@code stage} with this build's Maven and local repository, which
   * already holds every artifact it needs. Not offline: the SBOM plugin runs only online, as in the
   * image's build. The dependency plugin's go-offline step only fills the repository: here the
   * reactor it reads (every module's pom) is checked with {@code validate}.
   */
  private static void runMaven(String command, Path stage, Path log) throws Exception {
    List<String> words = new ArrayList<>(Arrays.asList(command.split("\\s+")));
    words.remove(0);
    if (words.stream().anyMatch(word -> word.endsWith(":go-offline"))) {
      words.removeIf(word -> word.endsWith(":go-offline"));
      words.add("validate");
    }
    String mavenHome = System.getProperty("maven.home");
    assertThat(mavenHome).as("maven.home, given to the tests by the pom").isNotBlank();
    List<String> run =
        new ArrayList<>(
            List.of(
                Path.of(mavenHome, "bin", "mvn").toString(),
                "-Dmaven.repo.local=" + System.getProperty("maven.repo.local")));
    run.addAll(words);
    Process maven =
        new ProcessBuilder(run)
            .directory(stage.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    assertThat(maven.waitFor(5, TimeUnit.MINUTES)).as("%s finishes", command).isTrue();
    assertThat(maven.exitValue())
        .as("%s in the staged build context; its output:\n%s", command, Files.readString(log))
        .isZero();
  }
}
