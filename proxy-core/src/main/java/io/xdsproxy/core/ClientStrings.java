package io.xdsproxy.core;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A client's strings as the proxy shows them (STYLE: "a client's strings are data, not code"): cut
 * to a bound before they go into a log line, a status or a metric label, so that a node id of a
 * mebibyte does not write a mebibyte per line or per series; and, where they leave the proxy as
 * text, with every character that could end a line or disguise one escaped, so that no client can
 * start a line of its own in the log. The log encoders escape whole lines with {@link #escaped};
 * what is quoted in a gRPC status or an HTTP reply is escaped here ({@link #shown}).
 */
public final class ClientStrings {

  /**
   * The most characters of a client's string that a log field or a message shows: Istio's node ids
   * ({@code sidecar~IP~pod.namespace~namespace.svc.cluster.local}, the pod name at most 63
   * characters) and clusters are well under it, so a real fleet's ids are shown whole.
   */
  public static final int SHOWN = 256;

  /**
   * The longest metric label value made of a client's string: past it, the value is its first
   * characters and a hash ({@link #label}).
   */
  public static final int LABEL = 64;

  /** Of a label too long, the characters kept before its hash. */
  private static final int LABEL_KEPT = 48;

  private ClientStrings() {}

  /** {@code value} cut to {@link #SHOWN} characters, as {@link #bounded(String, int)}. */
  public static String bounded(String value) {
    return bounded(value, SHOWN);
  }

  /**
   * {@code value} whole if it has at most {@code max} characters, else its first {@code max} and
   * how many were left out: {@code abc…(+1048573 chars)}. A surrogate pair is not split. Null stays
   * null.
   */
  public static String bounded(String value, int max) {
    if (value == null || value.length() <= max) {
      return value;
    }
    int end = cut(value, max);
    return value.substring(0, end) + "…(+" + (value.length() - end) + " chars)";
  }

  /**
   * {@code value} bounded ({@link #bounded(String)}), then escaped ({@link #escaped}): a client's
   * string quoted in a gRPC status or an HTTP reply, which the client, or whoever logs it, prints.
   */
  public static String shown(String value) {
    return escaped(bounded(value));
  }

  /**
   * {@code value} with every character {@link #needsEscape} escaped: {@code \n}, {@code \r}, {@code
   * \t}, and {@code \}{@code uXXXX} for the others (each UTF-16 unit of a supplementary one). A
   * backslash is kept as it is, so a message that shows a regex or a path stays readable; an escape
   * and the same text typed by a client look alike, but neither starts a line.
   */
  public static String escaped(String value) {
    if (value == null) {
      return null;
    }
    int first = firstToEscape(value);
    if (first < 0) {
      return value;
    }
    StringBuilder out = new StringBuilder(value.length() + 16).append(value, 0, first);
    for (int i = first; i < value.length(); ) {
      int c = value.codePointAt(i);
      int width = Character.charCount(c);
      if (!needsEscape(c)) {
        out.appendCodePoint(c);
      } else if (c == '\n') {
        out.append("\\n");
      } else if (c == '\r') {
        out.append("\\r");
      } else if (c == '\t') {
        out.append("\\t");
      } else {
        for (char unit : Character.toChars(c)) {
          out.append("\\u").append(HexFormat.of().toHexDigits(unit));
        }
      }
      i += width;
    }
    return out.toString();
  }

  /**
   * Whether code point {@code c} is escaped: the C0 and C1 controls and DEL (CR, LF, NEL, vertical
   * tab, form feed, …: what one line splitter or another takes for the end of a line, or a terminal
   * for a command), the line and paragraph separators U+2028 and U+2029, and the format characters,
   * among them the bidirectional overrides and isolates (U+202A–U+202E, U+2066–U+2069) that make a
   * line read as other than it is.
   */
  public static boolean needsEscape(int c) {
    return switch (Character.getType(c)) {
      case Character.CONTROL,
          Character.LINE_SEPARATOR,
          Character.PARAGRAPH_SEPARATOR,
          Character.FORMAT ->
          true;
      default -> false;
    };
  }

  /** The index of the first character of {@code value} to escape, -1 if none. */
  private static int firstToEscape(String value) {
    for (int i = 0; i < value.length(); ) {
      int c = value.codePointAt(i);
      if (needsEscape(c)) {
        return i;
      }
      i += Character.charCount(c);
    }
    return -1;
  }

  /**
   * {@code value} as a metric label: whole if it has at most {@link #LABEL} characters, else its
   * first {@value #LABEL_KEPT} characters, {@code ~} and the first 12 hex digits of its SHA-256,
   * the same on every replica and after a restart, so a series of a long key stays one series and
   * two long keys that begin alike stay two. How many values a label has is bounded elsewhere (a
   * group label by the groups there may be); this bounds what each costs.
   */
  public static String label(String value) {
    if (value.length() <= LABEL) {
      return value;
    }
    try {
      byte[] hash =
          MessageDigest.getInstance("SHA-256").digest(value.getBytes(StandardCharsets.UTF_8));
      return value.substring(0, cut(value, LABEL_KEPT))
          + "~"
          + HexFormat.of().formatHex(hash, 0, 6);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JVM has SHA-256", e);
    }
  }

  /** Where to cut {@code value} to keep at most {@code max} characters, not inside a pair. */
  private static int cut(String value, int max) {
    return max > 0 && Character.isHighSurrogate(value.charAt(max - 1)) ? max - 1 : max;
  }
}
