package io.xdsproxy.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SweepTest {

  @Test
  void theSlopeIsThatOfTheLeastSquaresLine() {
    assertThat(Sweep.slope(List.of(new double[] {1000, 1}, new double[] {3000, 5})))
        .isCloseTo(0.002, within(1e-12));
    assertThat(
            Sweep.slope(
                List.of(
                    new double[] {1000, 1},
                    new double[] {5000, 2},
                    new double[] {10000, 4},
                    new double[] {20000, 6})))
        .as("fitted, not read from the ends")
        .isCloseTo(0.00026733, within(0.0000001));
    assertThat(Sweep.slope(List.of(new double[] {1000, 7}))).as("one point: no slope").isZero();
  }

  @Test
  void theSlopesArePerThousandClientsForEachSetup() {
    List<double[]> rising = List.of(new double[] {1000, 1}, new double[] {2000, 2});
    List<double[]> flat = List.of(new double[] {1000, 7}, new double[] {2000, 7});

    String table =
        Sweep.slopes(
            Sweep.Axis.CLIENTS,
            Map.of(Compare.Setup.FLOOR, rising),
            Map.of(Compare.Setup.FLOOR, rising),
            Map.of(Compare.Setup.FLOOR, flat));

    assertThat(table).contains("| bare gRPC floor | 1.000 | 1.000 | 0.000 |");
    assertThat(
            Sweep.slopes(
                Sweep.Axis.GROUPS,
                Map.of(Compare.Setup.FLOOR, rising),
                Map.of(Compare.Setup.FLOOR, rising),
                Map.of(Compare.Setup.FLOOR, flat)))
        .as("per 100 groups")
        .contains("s per 100 groups")
        .contains("| bare gRPC floor | 0.100 | 0.100 | 0.000 |");
  }
}
