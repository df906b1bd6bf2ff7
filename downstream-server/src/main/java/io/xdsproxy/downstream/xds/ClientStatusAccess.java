package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.VerifiedIdentity;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Set;

/**
 * Whose streams a caller of client status (CSDS) on the xDS port is told of (DESIGN invariants 10
 * and 11): a stream's status holds the configuration it was sent, so a caller sees only the streams
 * whose connections proved the same certificate names as its own, unless it is an operator: a
 * certificate carrying a name of {@code --client-status-admin}, or, without a certificate, a call
 * from the pod itself (127.0.0.1 or ::1), whom the admin port, bound there, already shows
 * everything. A caller without a certificate from elsewhere is refused: nothing proves which
 * streams are its own.
 *
 * <p>A certificate, when there is one, decides, wherever the call comes from, and only 127.0.0.1
 * and ::1 are local, not the rest of 127.0.0.0/8: a service mesh's sidecar relays every inbound
 * connection from the loopback (Istio's from 127.0.0.6, {@code InboundPassthroughBindIpv4} in
 * pilot/pkg/networking/util/util.go; older ones from 127.0.0.1), which would make every caller an
 * operator. {@code kubectl port-forward} connects from 127.0.0.1.
 *
 * @param adminNames certificate URI or DNS names, exactly, whose holder is told of every stream
 */
public record ClientStatusAccess(Set<String> adminNames) {

  /** Every stream to local callers and to no certificate: no {@code --client-status-admin}. */
  public static final ClientStatusAccess LOCAL_ONLY = new ClientStatusAccess(Set.of());

  public ClientStatusAccess {
    adminNames = Set.copyOf(adminNames);
  }

  /** Which streams a caller is told of. */
  public sealed interface Scope {

    /** Whether a stream whose connection proved {@code stream} is shown. */
    boolean shows(VerifiedIdentity stream);
  }

  /** Every stream: an operator. */
  public record Everything(String why) implements Scope {
    @Override
    public boolean shows(VerifiedIdentity stream) {
      return true;
    }
  }

  /**
   * The streams of connections whose certificates proved exactly {@code names}: the caller's own,
   * whichever of its certificates (a rotated one has the same names).
   */
  public record Own(Set<String> names) implements Scope {
    public Own {
      names = Set.copyOf(names);
    }

    @Override
    public boolean shows(VerifiedIdentity stream) {
      return stream.certified() && names.equals(Set.copyOf(stream.names()));
    }
  }

  /** Nothing; the call is refused with {@code why}. */
  public record Refused(String why) implements Scope {
    @Override
    public boolean shows(VerifiedIdentity stream) {
      return false;
    }
  }

  /** What {@code caller}, connected from {@code peer}, is told of. */
  public Scope scope(VerifiedIdentity caller, SocketAddress peer) {
    if (!caller.certified()) {
      if (local(peer)) {
        return new Everything("it calls from " + peer + ", the pod itself, as the admin port");
      }
      return new Refused(
          "client status (CSDS) on the xDS port answers a caller without a client certificate only"
              + " from 127.0.0.1 or ::1 (as the admin port: kubectl port-forward); without one"
              + " nothing proves which streams are its own. Call with a certificate of"
              + " --tls-client-ca to be told of the streams of that certificate's names, or one"
              + " carrying a name of --client-status-admin to be told of all");
    }
    for (String name : caller.names()) {
      if (adminNames.contains(name)) {
        return new Everything("its certificate names '" + name + "' (--client-status-admin)");
      }
    }
    if (caller.names().isEmpty()) {
      return new Refused(
          "client status (CSDS) tells a caller of the streams whose certificates carry the same"
              + " names as its own, and its certificate carries no URI or DNS name: nothing proves"
              + " which streams are its own. Give it a name, or one of --client-status-admin");
    }
    return new Own(Set.copyOf(caller.names()));
  }

  /** Whether {@code peer} is the pod itself: 127.0.0.1 or ::1, exactly. */
  static boolean local(SocketAddress peer) {
    if (!(peer instanceof InetSocketAddress inet) || inet.getAddress() == null) {
      return false;
    }
    InetAddress address = inet.getAddress();
    if (!address.isLoopbackAddress()) {
      return false;
    }
    byte[] bytes = address.getAddress();
    return address instanceof Inet6Address
        || bytes[0] == 127 && bytes[1] == 0 && bytes[2] == 0 && bytes[3] == 1;
  }
}
