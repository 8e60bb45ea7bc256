package dev.varve.cli;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;

/** How keys and values are written on the command line and in output. */
enum Encoding {
    /**
     * UTF-8 text; bytes that are not valid UTF-8, hold control characters or would read as a prefixed key are printed
     * as {@code hex:...}, which {@link #decode} reads back.
     */
    utf8,
    /** Lower-case hex digits. */
    hex,
    /** Standard base64. */
    base64;

    /** The charset the JVM decoded the command line with: the locale's (this property is how the JDK names it). */
    private static final String ARGUMENTS = System.getProperty("sun.jnu.encoding", "UTF-8");
    private static final boolean ARGUMENTS_UTF8 = ARGUMENTS.equalsIgnoreCase("UTF-8") || ARGUMENTS.equalsIgnoreCase("UTF8");

    String encode(byte[] b) {
        switch (this) {
            case hex:
                return HexFormat.of().formatHex(b);
            case base64:
                return Base64.getEncoder().encodeToString(b);
            default:
                try {
                    String text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                            .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
                    if (text.chars().noneMatch(Character::isISOControl) && !text.startsWith("hex:") && !text.startsWith("base64:")) return text;
                } catch (CharacterCodingException e) {
                    // not text: shown as hex below
                }
                return "hex:" + HexFormat.of().formatHex(b);
        }
    }

    /** Parses a key given on the command line; {@code hex:} and {@code base64:} prefixes override the encoding. */
    byte[] decode(String s) {
        if (s.startsWith("hex:")) return hex.decode(s.substring(4));
        if (s.startsWith("base64:")) return base64.decode(s.substring(7));
        try {
            switch (this) {
                case hex:
                    return HexFormat.of().parseHex(s);
                case base64:
                    return Base64.getDecoder().decode(s);
                default:
                    if (s.indexOf('\uFFFD') >= 0 && !ARGUMENTS_UTF8) // the key the user typed is not the one we got
                        throw new IllegalArgumentException("'" + s + "' holds U+FFFD: the JVM read the command line as " + ARGUMENTS
                                + " (the locale), which turns every byte that is not ASCII into it; give the key as hex:... or base64:..., "
                                + "or run under a UTF-8 locale (e.g. LC_ALL=C.UTF-8)");
                    return s.getBytes(StandardCharsets.UTF_8);
            }
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("'" + s + "' is not valid " + this + ": " + e.getMessage(), e);
        }
    }
}
