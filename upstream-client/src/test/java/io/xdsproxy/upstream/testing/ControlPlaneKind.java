package io.xdsproxy.upstream.testing;

import java.io.IOException;

/**
 * The control planes the suite runs the proxy against: java-control-plane for real, the others as
 * models written from their source. A test parameterised over these states a behaviour once and
 * checks it against each peer's answering rules.
 */
public enum ControlPlaneKind {
  JAVA_CONTROL_PLANE {
    @Override
    public UpstreamControlPlane create() throws IOException {
      return new ControlPlane();
    }
  },
  /** istiod's answering rules, as {@link IstiodModel} has them from its source. */
  ISTIOD {
    @Override
    public UpstreamControlPlane create() throws IOException {
      return new IstiodModel();
    }
  };

  /** A new control plane of this kind, serving on a loopback port. */
  public abstract UpstreamControlPlane create() throws IOException;
}
