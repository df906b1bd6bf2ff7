package io.xdsproxy.app.testing;

import io.xdsproxy.upstream.grpc.AdsUpstream.Protocol;
import io.xdsproxy.upstream.testing.ControlPlaneKind;
import io.xdsproxy.upstream.testing.UpstreamControlPlane;
import java.io.IOException;
import java.util.Arrays;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * One cell of the matrix tests run over: a control plane the proxy is tested against (java-control-
 * plane, or a model of istiod or go-control-plane), and the variant the proxy speaks to it. Short
 * scenarios run in {@link #everyCell}; longer ones in {@link #representativeCells}.
 */
public record ControlPlaneCell(ControlPlaneKind controlPlane, Protocol upstream) {

  /**
   * For {@code @MethodSource}: {@link #everyCell}, {@link #representativeCells}, {@link
   * #sotwCells}.
   */
  public static final String EVERY = "io.xdsproxy.app.testing.ControlPlaneCell#everyCell";

  public static final String REPRESENTATIVE =
      "io.xdsproxy.app.testing.ControlPlaneCell#representativeCells";
  public static final String SOTW = "io.xdsproxy.app.testing.ControlPlaneCell#sotwCells";

  /** Every control plane, each over SotW and Delta. */
  public static Stream<ControlPlaneCell> everyCell() {
    return Arrays.stream(ControlPlaneKind.values())
        .flatMap(
            kind ->
                Stream.of(
                    new ControlPlaneCell(kind, Protocol.SOTW),
                    new ControlPlaneCell(kind, Protocol.DELTA)));
  }

  /**
   * One cell per control plane, the upstream variant alternating: for the scenarios that take
   * longer.
   */
  public static Stream<ControlPlaneCell> representativeCells() {
    ControlPlaneKind[] kinds = ControlPlaneKind.values();
    return IntStream.range(0, kinds.length)
        .mapToObj(i -> new ControlPlaneCell(kinds[i], i % 2 == 0 ? Protocol.SOTW : Protocol.DELTA));
  }

  /** Every control plane, the proxy speaking SotW to it. */
  public static Stream<ControlPlaneCell> sotwCells() {
    return Arrays.stream(ControlPlaneKind.values())
        .map(kind -> new ControlPlaneCell(kind, Protocol.SOTW));
  }

  /** A new control plane of this cell's kind, serving on a loopback port. */
  public UpstreamControlPlane create() throws IOException {
    return controlPlane.create();
  }

  @Override
  public String toString() {
    return controlPlane + " over " + upstream;
  }
}
