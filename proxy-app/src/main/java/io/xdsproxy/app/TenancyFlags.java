package io.xdsproxy.app;

import static io.xdsproxy.app.FlagValues.readable;
import static io.xdsproxy.app.FlagValues.trueOrFalse;
import static io.xdsproxy.app.Flags.Flag.list;
import static io.xdsproxy.app.Flags.Flag.single;

import io.xdsproxy.app.Flags.Flag;
import io.xdsproxy.app.ProxyConfig.ConfigException;
import io.xdsproxy.core.NodeGroupRule;
import java.util.List;

/**
 * The flags of node groups and tenants: what makes a client's group, what the control plane sees of
 * a group, who is entitled to Secrets and to client status (README, Security). Entries of {@link
 * Flags#ALL}, in the order {@code --help} and the README list them.
 */
final class TenancyFlags {

  private TenancyFlags() {}

  static final List<Flag> ALL =
      List.of(
          list(
              "node-group-key",
              "PART",
              "cluster",
              "a part of the node-group key, given once per part, in order: cluster, locality, id:<regex with a capture"
                  + " group>, metadata:<dotted.path> (chosen by the client); san:<regex with a capture group> (read from"
                  + " its certificate's URI and DNS names); <part>=san:<regex> (the certificate's, which the node's claim"
                  + " must equal)",
              (config, setting) -> {
                try {
                  NodeGroupRule.of(setting.values());
                } catch (IllegalArgumentException e) {
                  throw new ConfigException(setting.where() + ": " + e.getMessage());
                }
                return config.withNodeGroupKey(setting.values());
              }),
          single(
              "upstream-node-id",
              "T",
              "",
              "the upstream sees each group's first client's node with this id; {group} and {id} are replaced; without"
                  + " it, the node unchanged",
              (config, setting) -> config.withUpstreamNodeId(setting.value())),
          single(
              "upstream-node",
              "FILE",
              "",
              "the node the upstream sees for each group, YAML or JSON, {group} and {1}, {2}, ... (the key's parts)"
                  + " replaced in its strings; without it, the group's first client's node, which every other member's"
                  + " cluster, locality and metadata must equal",
              (config, setting) ->
                  config.withTenancy(config.tenancy().withUpstreamNode(readable(setting)))),
          single(
              "allow-client-chosen-groups",
              "true|false",
              "false",
              "with tls-client-ca: let node-group key parts no certificate binds stand, so that any client may join"
                  + " any group it names",
              (config, setting) ->
                  config.withTenancy(
                      config
                          .tenancy()
                          .withClientChosenGroups(
                              trueOrFalse(setting, "allow-client-chosen-groups")))),
          single(
              "secrets-to-unverified-clients",
              "true|false",
              "false",
              "serve Secrets (private keys) also to clients whose node group no verified certificate decides: to"
                  + " anyone who names the group",
              (config, setting) ->
                  config.withTenancy(
                      config
                          .tenancy()
                          .withSecretsToUnverifiedClients(
                              trueOrFalse(setting, "secrets-to-unverified-clients")))),
          list(
              "client-status-admin",
              "NAME",
              "",
              "a client certificate URI or DNS name, exactly, whose holder client status (CSDS) on the xDS port tells of"
                  + " every stream; give the flag once per name. Other certificates are told of the streams of their own"
                  + " names; callers without one, of all from 127.0.0.1 or ::1, else refused",
              (config, setting) -> {
                if (setting.values().stream().anyMatch(String::isBlank)) {
                  throw new ConfigException(
                      setting.where()
                          + ": client-status-admin is given an empty name: give a client"
                          + " certificate's URI or DNS name");
                }
                return config.withTenancy(
                    config.tenancy().withClientStatusAdmins(setting.values()));
              }));
}
