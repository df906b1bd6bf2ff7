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
  },
  /** go-control-plane HEAD, SotW and Delta servers over the ADS SnapshotCache. */
  GO_SNAPSHOT {
    @Override
    public UpstreamControlPlane create() throws IOException {
      return new GoControlPlaneModel(GoControlPlaneModel.Flavour.SNAPSHOT);
    }
  },
  /**
   * go-control-plane v0.13.4 over the ADS SnapshotCache: the re-subscription rule of
   * go-control-plane#583.
   */
  GO_SNAPSHOT_V013 {
    @Override
    public UpstreamControlPlane create() throws IOException {
      return new GoControlPlaneModel(GoControlPlaneModel.Flavour.SNAPSHOT_V0_13_4);
    }
  },
  /** go-control-plane HEAD over one LinearCache per node group and type. */
  GO_LINEAR {
    @Override
    public UpstreamControlPlane create() throws IOException {
      return new GoControlPlaneModel(GoControlPlaneModel.Flavour.LINEAR);
    }
  };

  /** A new control plane of this kind, serving on a loopback port. */
  public abstract UpstreamControlPlane create() throws IOException;
}
