package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * What every snapshot format's descriptor checks the same way: the CRC32C of a byte range, and its version field — a
 * reader refuses a version it does not know, by name, rather than read bytes laid out some other way. Each
 * descriptor lists its versions.
 */
final class FormatChecks {
    private FormatChecks() {
    }

    /** CRC32C of bytes [from, to) of {@code b}, whatever its position and limit. */
    static int crc32c(ByteBuffer b, int from, int to) {
        CRC32C c = new CRC32C();
        c.update(b.duplicate().clear().position(from).limit(to));
        return (int) c.getValue();
    }

    /**
     * Throws a {@link CorruptionException} naming {@code file} and the version field at {@code offset} unless
     * {@code found} is {@code supported}, the only version of {@code format} this build reads.
     */
    static void refuseUnknownVersion(String format, int found, int supported, Path file, int offset) {
        refuseUnknownVersion(format, found, supported, supported, file, offset);
    }

    /** As {@link #refuseUnknownVersion(String, int, int, Path, int)} for a format read from version {@code min} to {@code max}. */
    static void refuseUnknownVersion(String format, int found, int min, int max, Path file, int offset) {
        if (found < min || found > max)
            throw new CorruptionException("unsupported " + format + " format version " + found + " (this build reads version"
                    + (min == max ? " " + max : "s " + min + " to " + max) + ")", file, offset);
    }
}
