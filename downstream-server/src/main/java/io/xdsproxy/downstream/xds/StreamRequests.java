package io.xdsproxy.downstream.xds;

import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;

/**
 * How a variant's requests are read, and how they name the client's node, the type they are about
 * and how many resources: what a stream reads of each request before its type's {@link TypeState}
 * takes it.
 *
 * @param names how many resource names a request holds, in all its fields of names
 */
record StreamRequests<Q extends com.google.protobuf.Message>(
    String protocol,
    RequestMarshaller<Q> marshaller,
    Predicate<Q> hasNode,
    Function<Q, Node> node,
    Function<Q, String> typeUrl,
    ToIntFunction<Q> names) {}
