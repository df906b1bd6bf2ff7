package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.TypeUrl;
import io.xdsproxy.core.VerifiedIdentity;
import java.util.Optional;

/**
 * Who may be served what, decided from what a client's connection proved ({@link
 * VerifiedIdentity}), never from its node's claims (DESIGN invariants 10 and 11): the node ids a
 * client may name, and whether Secrets reach it. The same rules hold on every service and variant
 * (ADS and per-type, SotW and Delta, REST-JSON).
 *
 * @param nodeIdPattern the node ids a client certificate allows ({@code --tls-node-id-pattern});
 *     empty: any
 * @param groupsVerified whether every part of the node-group key that decides a client's group is
 *     bound to its certificate: then a certified client joins only a group it is entitled to
 * @param secretsToUnverified serve Secrets to clients whose group is not bound to a verified
 *     certificate too ({@code --secrets-to-unverified-clients}): any client that names the group
 *     gets its private keys
 */
public record Access(
    Optional<NodeIdPattern> nodeIdPattern, boolean groupsVerified, boolean secretsToUnverified) {

  /** Everything to everyone: in-process tests and benchmarks, which have no connections. */
  public static final Access OPEN = new Access(Optional.empty(), false, true);

  /** Empty when a client with {@code identity} may name node {@code nodeId}; else why not. */
  Optional<String> nodeIdRefusal(String nodeId, VerifiedIdentity identity) {
    return nodeIdPattern.flatMap(pattern -> pattern.refusal(nodeId, identity.names()));
  }

  /**
   * Empty when a client with {@code identity} may be served resources of {@code type} of its group;
   * else why not. A Secret holds a private key: it goes only to a client whose certificate was
   * verified and whose group that certificate decides, so that no one gets a key by naming its
   * group (CVE-2021-34824 was istiod handing any authorized client any cached key).
   */
  Optional<String> typeRefusal(TypeUrl type, VerifiedIdentity identity, String nodeId) {
    if (!type.equals(TypeUrl.SECRET) || secretsToUnverified) {
      return Optional.empty();
    }
    if (identity.certified() && groupsVerified) {
      return Optional.empty();
    }
    return Optional.of(
        "Secrets are served only to a client authenticated by its certificate whose node group"
            + " the certificate decides (node '"
            + nodeId
            + "', "
            + identity
            + "): the proxy needs --tls-client-ca and a --node-group-key bound to the certificate"
            + " (san: parts), or --secrets-to-unverified-clients true to serve them to anyone who"
            + " names the group");
  }
}
