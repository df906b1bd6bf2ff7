package io.xdsproxy.app;

import static io.xdsproxy.app.FlagValues.certificates;
import static io.xdsproxy.app.FlagValues.privateKey;
import static io.xdsproxy.app.FlagValues.readable;
import static io.xdsproxy.app.FlagValues.trueOrFalse;
import static io.xdsproxy.app.Flags.Flag.single;

import io.xdsproxy.app.Flags.Flag;
import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.downstream.xds.NodeIdPattern;
import io.xdsproxy.upstream.grpc.UpstreamTls;
import java.util.List;

/**
 * The flags of TLS, on the xDS port and to the control plane. Entries of {@link Flags#ALL}, in the
 * order {@code --help} and the README list them.
 */
final class TlsFlags {

  private TlsFlags() {}

  static final List<Flag> ALL =
      List.of(
          single(
              "tls-cert",
              "FILE",
              "",
              "TLS on the xDS port: the server's certificate chain (PEM); with --tls-key, both or neither",
              (config, setting) -> {
                ServerTls tls = config.tls();
                return config.withTls(tls.withCert(certificates(setting)));
              }),
          single(
              "tls-key",
              "FILE",
              "",
              "its private key (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC)",
              (config, setting) -> {
                ServerTls tls = config.tls();
                return config.withTls(tls.withKey(privateKey(setting)));
              }),
          single(
              "tls-client-ca",
              "FILE",
              "",
              "mTLS: clients must present a certificate of these CAs (PEM)",
              (config, setting) -> {
                ServerTls tls = config.tls();
                return config.withTls(tls.withClientCa(certificates(setting)));
              }),
          single(
              "tls-node-id-pattern",
              "P",
              "",
              "with mTLS, a regex the node id must match, where {san} is one of the client certificate's URI or DNS names"
                  + " (a SPIFFE id)",
              (config, setting) -> {
                try {
                  new NodeIdPattern(setting.value());
                } catch (IllegalArgumentException e) {
                  throw new ConfigException(setting.where() + ": " + e.getMessage());
                }
                ServerTls tls = config.tls();
                return config.withTls(tls.withNodeIdPattern(setting.value()));
              }),
          single(
              "tls-provider",
              "auto|openssl|jdk",
              "auto",
              "the xDS port's TLS: openssl (BoringSSL, Linux x86_64 and aarch64 with glibc), jdk, or auto:"
                  + " openssl where it loads, else jdk; openssl where it cannot load refuses to start",
              (config, setting) -> {
                TlsProvider provider;
                try {
                  provider = TlsProvider.of(setting.value());
                } catch (IllegalArgumentException e) {
                  throw new ConfigException(setting.where() + ": " + e.getMessage());
                }
                ServerTls tls = config.tls();
                return config.withTls(tls.withProvider(provider));
              }),
          single(
              "upstream-tls",
              "true|false",
              "false",
              "true: TLS to the control plane, trusting the JVM's trust store",
              (config, setting) ->
                  trueOrFalse(setting, "upstream-tls")
                      ? config.withUpstreamTls(config.upstreamTls().withTls())
                      : config),
          single(
              "upstream-ca",
              "FILE",
              "",
              "TLS to the control plane, trusting these CAs (PEM)",
              (config, setting) -> {
                UpstreamTls tls = config.upstreamTls();
                return config.withUpstreamTls(tls.withCa(certificates(setting)));
              }),
          single(
              "upstream-cert",
              "FILE",
              "",
              "mTLS to the control plane: the proxy's certificate chain (PEM); with --upstream-key, both or neither",
              (config, setting) -> {
                UpstreamTls tls = config.upstreamTls();
                return config.withUpstreamTls(tls.withTls().withCert(certificates(setting)));
              }),
          single(
              "upstream-key",
              "FILE",
              "",
              "its private key (PEM, as --tls-key)",
              (config, setting) -> {
                UpstreamTls tls = config.upstreamTls();
                return config.withUpstreamTls(tls.withKey(privateKey(setting)));
              }),
          single(
              "upstream-authority",
              "NAME",
              "",
              "the name the control plane's certificate must carry, sent as :authority; without it, the host of"
                  + " --upstream",
              (config, setting) -> {
                if (setting.value().isBlank() || setting.value().contains("/")) {
                  throw new ConfigException(
                      setting.where()
                          + ": upstream-authority '"
                          + setting.value()
                          + "' is not a host name");
                }
                UpstreamTls tls = config.upstreamTls();
                return config.withUpstreamTls(tls.withAuthority(setting.value()));
              }),
          // Before upstream-token-file: keys are applied in this order, and the file's check reads
          // this one.
          single(
              "upstream-token-over-plaintext",
              "true|false",
              "false",
              "true: send --upstream-token-file's token to a plaintext control plane too, where anyone on"
                  + " the path can read it",
              (config, setting) ->
                  config.withUpstreamTls(
                      config
                          .upstreamTls()
                          .withTokenOverPlaintext(
                              trueOrFalse(setting, "upstream-token-over-plaintext")))),
          single(
              "upstream-token-file",
              "FILE",
              "",
              "a bearer token sent as authorization on every call to the control plane (a Kubernetes"
                  + " service-account token, for istiod's port 15012); read again for each, so a rotated"
                  + " token is used; only over TLS",
              (config, setting) -> {
                UpstreamTls tls = config.upstreamTls();
                if (!tls.enabled() && !tls.tokenOverPlaintext()) {
                  throw new ConfigException(
                      setting.where()
                          + ": the token is sent only over TLS: give upstream-tls true or upstream-ca"
                          + " too, or upstream-token-over-plaintext true to send it in the clear");
                }
                return config.withUpstreamTls(tls.withTokenFile(readable(setting)));
              }));
}
