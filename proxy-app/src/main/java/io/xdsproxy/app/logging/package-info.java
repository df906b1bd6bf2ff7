/**
 * Where the proxy's log lines go and in what form: one line per event on stdout, text for a
 * terminal or JSON for a log pipeline ({@code --log-format}), with the key-value fields a stream or
 * an upstream session adds ({@link io.xdsproxy.core.LogFields}); and which loggers write what
 * ({@code --log-level}, {@code /logging} on the admin listener). Outside xDS's data flow: every
 * part of it logs through SLF4J, and only {@code Main} and the admin listener call this package.
 * Logback's own thread safety covers the level changes, made from any thread.
 */
package io.xdsproxy.app.logging;
