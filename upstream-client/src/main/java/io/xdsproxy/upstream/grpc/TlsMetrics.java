package io.xdsproxy.upstream.grpc;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The meters of one use of TLS files ({@code server}, {@code client-ca}, {@code upstream-client},
 * {@code upstream-ca}), registered only for the uses configured: when the earliest of the
 * certificates in use expires, following reloads, so that an alert fires before a rotation that
 * never happened breaks the handshakes; and the changes that did not load, so that one that left
 * the old certificate in use is seen before it expires.
 */
public final class TlsMetrics implements TlsFiles.Listener {

  private final AtomicLong expiresAt = new AtomicLong();
  private final Counter failures;

  /** {@code use}: what the files are for, the meters' {@code use} label. */
  public TlsMetrics(MeterRegistry meters, String use) {
    Gauge.builder("xds.tls.certificate.expiration.timestamp.seconds", expiresAt, AtomicLong::get)
        .description(
            "When the earliest of the certificates in use expires (its notAfter), in Unix seconds")
        .tag("use", use)
        .register(meters);
    this.failures =
        Counter.builder("xds.tls.reload.failures")
            .description(
                "Changes to TLS files that did not load; the previous certificates stay in use")
            .tag("use", use)
            .register(meters);
  }

  @Override
  public void loaded(List<X509Certificate> certificates) {
    expiresAt.set(
        certificates.stream()
            .mapToLong(c -> c.getNotAfter().toInstant().getEpochSecond())
            .min()
            .orElse(0));
  }

  @Override
  public void failed() {
    failures.increment();
  }
}
