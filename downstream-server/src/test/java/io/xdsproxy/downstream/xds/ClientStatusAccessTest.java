package io.xdsproxy.downstream.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.xdsproxy.core.VerifiedIdentity;
import io.xdsproxy.downstream.xds.ClientStatusAccess.Everything;
import io.xdsproxy.downstream.xds.ClientStatusAccess.Own;
import io.xdsproxy.downstream.xds.ClientStatusAccess.Refused;
import io.xdsproxy.downstream.xds.ClientStatusAccess.Scope;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The rule of whose streams a client status caller is told of, by what its connection proved and
 * where it connects from; the proxy-app tests check it over real connections (CsdsTenancyTest,
 * CsdsWithoutCertificateTest).
 */
class ClientStatusAccessTest {

  private static final String CART = "spiffe://cluster.local/ns/shop/sa/cart";
  private static final String VAULT = "spiffe://cluster.local/ns/bank/sa/vault";
  private static final String OPS = "spiffe://cluster.local/ns/ops/sa/admin";
  private static final ClientStatusAccess ACCESS = new ClientStatusAccess(Set.of(OPS));

  private static VerifiedIdentity certificate(String... names) {
    return new VerifiedIdentity(true, List.of(names), "10.0.0.7");
  }

  private static InetSocketAddress from(String host) {
    return new InetSocketAddress(host, 40000);
  }

  @Test
  void aCertifiedCallerSeesOnlyStreamsWithExactlyItsNames() {
    Scope scope = ACCESS.scope(certificate(CART, "cart.shop.svc"), from("10.0.0.7"));

    assertThat(scope).isInstanceOf(Own.class);
    assertThat(scope.shows(certificate("cart.shop.svc", CART))).isTrue();
    assertThat(scope.shows(certificate(VAULT))).isFalse();
    assertThat(scope.shows(certificate(CART))).as("a certificate with fewer names").isFalse();
    assertThat(scope.shows(VerifiedIdentity.anonymous("10.0.0.7")))
        .as("a plaintext stream from the same address")
        .isFalse();
  }

  @Test
  void aCertificateNamingAnAdminNameSeesEveryStream() {
    Scope scope = ACCESS.scope(certificate("ops.svc", OPS), from("10.0.0.9"));

    assertThat(scope).isInstanceOf(Everything.class);
    assertThat(scope.shows(certificate(VAULT))).isTrue();
    assertThat(scope.shows(VerifiedIdentity.anonymous("10.0.0.7"))).isTrue();
  }

  @Test
  void aCallerWithoutACertificateFromTheAdminPortsOwnAddressesSeesEveryStream() {
    for (String local : List.of("127.0.0.1", "::1")) {
      assertThat(ACCESS.scope(VerifiedIdentity.anonymous(local), from(local)))
          .as(local)
          .isInstanceOf(Everything.class);
    }
  }

  /**
   * A relay in the pod (a sidecar) makes every caller local: a certificate, when there is one,
   * decides wherever the call comes from.
   */
  @Test
  void aCertificateDecidesEvenFromTheLoopback() {
    assertThat(ACCESS.scope(certificate(CART), from("127.0.0.1"))).isEqualTo(new Own(Set.of(CART)));
    assertThat(ACCESS.scope(certificate(OPS), from("::1"))).isInstanceOf(Everything.class);
  }

  /**
   * A sidecar relays inbound connections from the loopback (Istio from 127.0.0.6): the rest of
   * 127.0.0.0/8 is not the pod's operator.
   */
  @Test
  void aCallerWithoutACertificateFromAnyOtherAddressIsRefusedNamingTheFlag() {
    for (String elsewhere : List.of("127.0.0.6", "10.0.0.7", "::6", "fd00::2")) {
      Scope scope = ACCESS.scope(VerifiedIdentity.anonymous(elsewhere), from(elsewhere));

      assertThat(scope).as(elsewhere).isInstanceOf(Refused.class);
      assertThat(((Refused) scope).why())
          .contains("--client-status-admin")
          .contains("--tls-client-ca")
          .contains("nothing proves which streams are its own");
      assertThat(scope.shows(VerifiedIdentity.anonymous(elsewhere))).isFalse();
    }
  }

  @Test
  void aCertificateWithoutNamesIsRefused() {
    Scope scope = ACCESS.scope(certificate(), from("10.0.0.7"));

    assertThat(scope).isInstanceOf(Refused.class);
    assertThat(((Refused) scope).why()).contains("no URI or DNS name");
  }
}
