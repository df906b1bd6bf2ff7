package io.xdsproxy.upstream.grpc;

import java.time.Duration;
import java.util.random.RandomGenerator;

/**
 * How long to wait before reconnecting to the upstream: exponential in the number of failed
 * attempts, capped, with jitter so that the replicas of a region (and the groups within one) do not
 * reconnect in lockstep after a control-plane restart.
 *
 * @param initial the delay after the first failure
 * @param max the cap on the delay, before jitter
 * @param multiplier the growth per failed attempt
 * @param jitter the fraction by which a delay is spread either way, in [0, 1)
 */
public record Backoff(Duration initial, Duration max, double multiplier, double jitter) {

  /** Envoy's and grpc-java's order of magnitude: half a second, doubling, up to 30 s, ±20 %. */
  public static final Backoff DEFAULT =
      new Backoff(Duration.ofMillis(500), Duration.ofSeconds(30), 2.0, 0.2);

  public Backoff {
    if (initial.isNegative() || initial.isZero() || max.compareTo(initial) < 0) {
      throw new IllegalArgumentException(
          "backoff needs 0 < initial <= max, got " + initial + " and " + max);
    }
    if (multiplier < 1.0 || jitter < 0.0 || jitter >= 1.0) {
      throw new IllegalArgumentException("backoff needs multiplier >= 1 and jitter in [0, 1)");
    }
  }

  /** The delay before attempt {@code attempt} (1 for the first retry). */
  public Duration delay(int attempt, RandomGenerator random) {
    double base = initial.toMillis() * Math.pow(multiplier, Math.max(0, attempt - 1));
    double capped = Math.min(base, max.toMillis());
    double spread = 1.0 + jitter * (2.0 * random.nextDouble() - 1.0);
    return Duration.ofMillis(Math.max(1L, Math.round(capped * spread)));
  }
}
