package io.xdsproxy.downstream.xds;

import io.xdsproxy.core.ClientStrings;
import io.xdsproxy.core.TypeUrl;
import java.util.Optional;

/**
 * The type a request is about: the type URL it names on ADS; on a per-type service, the service's
 * type, which the request may leave unnamed but must not contradict.
 */
final class RequestedType {

  private RequestedType() {}

  /**
   * The type of a request naming {@code typeUrl} on the service of {@code serviceType} (empty for
   * ADS).
   *
   * @throws IllegalArgumentException saying what is wrong, for the client: a type URL that names no
   *     type, or another type than the service's
   */
  static TypeUrl of(String typeUrl, Optional<TypeUrl> serviceType) {
    if (serviceType.isEmpty()) {
      return TypeUrl.parse(typeUrl);
    }
    TypeUrl served = serviceType.get();
    if (!typeUrl.isEmpty() && !typeUrl.equals(served.url())) {
      throw new IllegalArgumentException(
          "type_url "
              + ClientStrings.shown(typeUrl)
              + " sent to the "
              + served.shortName()
              + " discovery service");
    }
    return served;
  }
}
