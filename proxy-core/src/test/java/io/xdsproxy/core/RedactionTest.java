package io.xdsproxy.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.xds.type.v3.TypedStruct;
import com.google.protobuf.Any;
import com.google.protobuf.ByteString;
import com.google.protobuf.Struct;
import com.google.protobuf.UnknownFieldSet;
import com.google.protobuf.Value;
import com.google.protobuf.util.JsonFormat;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.DataSource;
import io.envoyproxy.envoy.config.core.v3.TransportSocket;
import io.envoyproxy.envoy.config.core.v3.TypedExtensionConfig;
import io.envoyproxy.envoy.config.listener.v3.Filter;
import io.envoyproxy.envoy.config.listener.v3.FilterChain;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.CommonTlsContext;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.GenericSecret;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.Secret;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.TlsCertificate;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.TlsSessionTicketKeys;
import org.junit.jupiter.api.Test;

class RedactionTest {

  private static final String KEY = "-----BEGIN PRIVATE KEY-----tenant-a";
  private static final String CHAIN = "-----BEGIN CERTIFICATE-----tenant-a";

  private static DataSource inline(String text) {
    return DataSource.newBuilder().setInlineString(text).build();
  }

  private static DataSource redacted() {
    return inline(Redaction.REDACTED);
  }

  private static TlsCertificate certificate() {
    return TlsCertificate.newBuilder()
        .setCertificateChain(inline(CHAIN))
        .setPrivateKey(DataSource.newBuilder().setInlineBytes(ByteString.copyFromUtf8(KEY)))
        .setPassword(inline("hunter2"))
        .build();
  }

  @Test
  void aSecretKeepsItsNameAndCertificateChainAndLosesItsKeyAndPassword() throws Exception {
    Secret secret =
        Secret.newBuilder().setName("shop-cert").setTlsCertificate(certificate()).build();

    Secret shown = Redaction.redact(Any.pack(secret)).unpack(Secret.class);

    assertThat(shown.getName()).isEqualTo("shop-cert");
    assertThat(shown.getTlsCertificate().getCertificateChain()).isEqualTo(inline(CHAIN));
    assertThat(shown.getTlsCertificate().getPrivateKey().getInlineBytes().toStringUtf8())
        .isEqualTo(Redaction.REDACTED);
    assertThat(shown.getTlsCertificate().getPassword()).isEqualTo(redacted());
    assertThat(shown.toString()).doesNotContain(KEY).doesNotContain("hunter2");
  }

  @Test
  void aGenericSecretsValuesAreRedactedAndItsMapKeysKept() throws Exception {
    Secret secret =
        Secret.newBuilder()
            .setName("tokens")
            .setGenericSecret(
                GenericSecret.newBuilder()
                    .setSecret(inline("token-1"))
                    .putSecrets("hmac", inline("token-2")))
            .build();

    GenericSecret shown =
        Redaction.redact(Any.pack(secret)).unpack(Secret.class).getGenericSecret();

    assertThat(shown.getSecret()).isEqualTo(redacted());
    assertThat(shown.getSecretsMap()).containsOnlyKeys("hmac");
    assertThat(shown.getSecretsMap().get("hmac")).isEqualTo(redacted());
  }

  /**
   * A private key inlined in a Listener's filter chain: inside the transport socket's {@code
   * typed_config}, an {@code Any} of DownstreamTlsContext, whose session ticket keys are sensitive
   * too. The rest of the Listener, its filters' configs included, is unchanged.
   */
  @Test
  void aKeyInsideATypedConfigOfAListenerIsRedactedAndTheRestKept() throws Exception {
    HttpConnectionManager manager =
        HttpConnectionManager.newBuilder().setStatPrefix("ingress").build();
    DownstreamTlsContext tls =
        DownstreamTlsContext.newBuilder()
            .setCommonTlsContext(CommonTlsContext.newBuilder().addTlsCertificates(certificate()))
            .setSessionTicketKeys(TlsSessionTicketKeys.newBuilder().addKeys(inline("ticket-key")))
            .build();
    Listener listener =
        Listener.newBuilder()
            .setName("ingress")
            .addFilterChains(
                FilterChain.newBuilder()
                    .addFilters(
                        Filter.newBuilder()
                            .setName("envoy.filters.network.http_connection_manager")
                            .setTypedConfig(Any.pack(manager)))
                    .setTransportSocket(
                        TransportSocket.newBuilder()
                            .setName("envoy.transport_sockets.tls")
                            .setTypedConfig(Any.pack(tls))))
            .build();

    Listener shown = Redaction.redact(Any.pack(listener)).unpack(Listener.class);

    FilterChain chain = shown.getFilterChains(0);
    DownstreamTlsContext shownTls =
        chain.getTransportSocket().getTypedConfig().unpack(DownstreamTlsContext.class);
    TlsCertificate shownCertificate = shownTls.getCommonTlsContext().getTlsCertificates(0);
    assertThat(shownCertificate.getPrivateKey().getInlineBytes().toStringUtf8())
        .isEqualTo(Redaction.REDACTED);
    assertThat(shownCertificate.getCertificateChain()).isEqualTo(inline(CHAIN));
    assertThat(shownTls.getSessionTicketKeys().getKeysList()).containsExactly(redacted());
    assertThat(chain.getFilters(0).getTypedConfig().unpack(HttpConnectionManager.class))
        .isEqualTo(manager);
    assertThat(shown.getName()).isEqualTo("ingress");
    assertThat(JsonFormat.printer().usingTypeRegistry(ApiTypes.json()).print(shown))
        .doesNotContain(KEY)
        .doesNotContain("ticket-key");
  }

  @Test
  void aKeyInsideATypedStructIsRedacted() throws Exception {
    Struct.Builder tls = Struct.newBuilder();
    JsonFormat.parser()
        .merge(
            JsonFormat.printer()
                .print(
                    DownstreamTlsContext.newBuilder()
                        .setCommonTlsContext(
                            CommonTlsContext.newBuilder().addTlsCertificates(certificate()))),
            tls);
    TypedStruct typed =
        TypedStruct.newBuilder()
            .setTypeUrl("type.googleapis.com/" + DownstreamTlsContext.getDescriptor().getFullName())
            .setValue(tls)
            .build();

    TypedStruct shown = Redaction.redact(Any.pack(typed)).unpack(TypedStruct.class);

    assertThat(shown.getTypeUrl()).isEqualTo(typed.getTypeUrl());
    assertThat(JsonFormat.printer().print(shown.getValue()))
        .doesNotContain(KEY)
        .contains(Redaction.REDACTED)
        .contains("certificateChain");
  }

  @Test
  void aResourceWithNothingSensitiveIsReturnedItself() {
    Any cluster = Any.pack(Cluster.newBuilder().setName("shop").build());

    assertThat(Redaction.redact(cluster)).isSameAs(cluster);
  }

  @Test
  void aRedactedResourceIsMadeOncePerBody() {
    Any secret =
        Any.pack(Secret.newBuilder().setName("s").setTlsCertificate(certificate()).build());

    assertThat(Redaction.redact(secret)).isNotEqualTo(secret).isSameAs(Redaction.redact(secret));
  }

  /**
   * The proxy forwards types newer than its API: what it cannot read may be a key, so its bytes are
   * not shown, wherever it is; its type URL still says what it was.
   */
  @Test
  void anAnyOfATypeTheProxyDoesNotKnowIsShownWithoutItsBytes() throws Exception {
    Any unknown =
        Any.newBuilder()
            .setTypeUrl("type.googleapis.com/example.vault.v1.Credentials")
            .setValue(ByteString.copyFromUtf8(KEY))
            .build();
    Listener listener =
        Listener.newBuilder()
            .setName("custom")
            .addFilterChains(
                FilterChain.newBuilder()
                    .addFilters(Filter.newBuilder().setName("vault").setTypedConfig(unknown)))
            .build();

    Any shownAlone = Redaction.redact(unknown);
    Any shownInside =
        Redaction.redact(Any.pack(listener))
            .unpack(Listener.class)
            .getFilterChains(0)
            .getFilters(0)
            .getTypedConfig();

    for (Any shown : new Any[] {shownAlone, shownInside}) {
      assertThat(shown.getTypeUrl()).isEqualTo(unknown.getTypeUrl());
      assertThat(shown.getValue().toStringUtf8()).isEqualTo(Redaction.REDACTED);
    }
  }

  @Test
  void bytesThatDoNotParseAsTheirTypeAreNotShown() {
    Any garbage =
        Any.newBuilder()
            .setTypeUrl(TypeUrl.SECRET.url())
            .setValue(ByteString.copyFrom(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff}))
            .build();

    assertThat(Redaction.redact(garbage).getValue().toStringUtf8()).isEqualTo(Redaction.REDACTED);
  }

  /** A field newer than the proxy's API may be a sensitive one: it is dropped. */
  @Test
  void fieldsTheProxysApiDoesNotHaveAreDropped() throws Exception {
    Cluster newer =
        Cluster.newBuilder()
            .setName("shop")
            .setUnknownFields(
                UnknownFieldSet.newBuilder()
                    .addField(
                        9999,
                        UnknownFieldSet.Field.newBuilder()
                            .addLengthDelimited(ByteString.copyFromUtf8(KEY))
                            .build())
                    .build())
            .build();

    Any shown = Redaction.redact(Any.pack(newer));

    assertThat(shown.getValue().toStringUtf8()).doesNotContain(KEY);
    assertThat(shown.unpack(Cluster.class)).isEqualTo(Cluster.newBuilder().setName("shop").build());
  }

  /** A hostile resource of Anys nested thousands deep is cut short, not a stack overflow. */
  @Test
  void anysNestedDeeperThanTheLimitAreOpaque() throws Exception {
    Any nested =
        Any.pack(
            Struct.newBuilder()
                .putFields("key", Value.newBuilder().setStringValue(KEY).build())
                .build());
    for (int i = 0; i < 1_000; i++) {
      nested =
          Any.pack(
              TypedExtensionConfig.newBuilder().setName("n" + i).setTypedConfig(nested).build());
    }

    Any shown = Redaction.redact(nested);

    assertThat(shown.getValue().toStringUtf8()).doesNotContain(KEY);
    assertThat(shown.unpack(TypedExtensionConfig.class).getName()).isEqualTo("n999");
  }
}
