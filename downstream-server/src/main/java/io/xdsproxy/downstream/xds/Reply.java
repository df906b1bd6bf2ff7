package io.xdsproxy.downstream.xds;

/** What a request says of the response it names by nonce. */
enum Reply {
  /** Names no response, or one that is no longer the latest. */
  NONE,
  ACK,
  NACK;

  /**
   * What a request with {@code nonce} says, {@code answers} whether the nonce is one the variant
   * takes as answering the latest response, {@code errorDetail} whether it carries one.
   */
  static Reply of(boolean answers, String nonce, boolean errorDetail) {
    return !answers || nonce.isEmpty() ? NONE : errorDetail ? NACK : ACK;
  }
}
