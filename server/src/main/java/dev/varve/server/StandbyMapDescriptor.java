package dev.varve.server;

import dev.varve.core.io.CorruptionException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * The layout of a standby's snapshot map ({@value Standby#SNAPSHOT_MAP}, {@link Standby}): US-ASCII text, a line per
 * snapshot the standby keeps, appended by {@link StandbyWriter} (each fsynced after the standby declared its snapshot)
 * and rewritten whole in one rename when it sheds the lines of dropped ones.
 *
 * <pre>
 *   varve-standby-map 2\n                       the header: magic and format version
 *   SENDER-ID LOCAL-ID CRC\n                     one line per snapshot: decimal ids, CRC the crc32c of
 *   ...                                          "SENDER-ID LOCAL-ID" as 8 lowercase hex digits
 * </pre>
 *
 * <p>A map is read strictly, as the WAL is: only its end may be torn by a crash during an append — bytes after the
 * last newline, or a last line that fails its CRC — and is then not read (the declaration it was being written for
 * happened, and is found as the standby's latest snapshot). Any other line that fails its CRC or does not parse is
 * damage, reported with the file and the line's offset: a flipped digit must not map a sender snapshot to another
 * of the standby's snapshots.
 *
 * <p>Format versions: 1, lines {@code SENDER-ID LOCAL-ID} without header or CRC (builds before version 2; read as
 * it is, a line that does not parse skipped as before); 2, the header and a CRC per line.
 */
final class StandbyMapDescriptor {
    static final int VERSION = 2;
    static final String MAGIC = "varve-standby-map";
    /** The first line of a map of the current version. */
    static final String HEADER = MAGIC + " " + VERSION + "\n";

    private StandbyMapDescriptor() {
    }

    /** The header's bytes, which a new map starts with. */
    static byte[] header() {
        return HEADER.getBytes(StandardCharsets.US_ASCII);
    }

    /** The line mapping sender snapshot {@code sender} to the standby's {@code local}, newline included. */
    static String line(long sender, long local) {
        String ids = sender + " " + local;
        return ids + " " + String.format("%08x", crc(ids)) + "\n";
    }

    /** The map the bytes of {@code file} hold, sender id to local id; a {@link CorruptionException} when damaged. */
    static Map<Long, Long> decode(byte[] bytes, Path file) {
        String text = new String(bytes, StandardCharsets.US_ASCII);
        Map<Long, Long> map = new TreeMap<>();
        // new, or its header cut short: no line yet. Only while no longer than the header: a longer map of zeros (or
        // any other first line) lost its header and lines, which is damage, not an empty map
        if (text.length() <= HEADER.length() && HEADER.startsWith(text.replaceFirst("\0+$", ""))) return map;
        int end = text.indexOf('\n');
        String first = end < 0 ? text : text.substring(0, end);
        if (!first.startsWith(MAGIC)) {
            if (!first.matches("\\d+ \\d+"))
                throw new CorruptionException("not a standby snapshot map: its first line is '" + first + "'", file, 0);
            decodeVersion1(text, map); // written before version 2, which added the header
            return map;
        }
        if (!first.equals(HEADER.strip()) || end < 0)
            throw new CorruptionException("unsupported standby snapshot map header '" + first + "' (this build reads version " + VERSION + ")", file, 0);
        int at = end + 1;
        while (true) {
            int next = text.indexOf('\n', at);
            if (next < 0) return map; // what follows the last newline is a torn append
            String line = text.substring(at, next);
            long[] ids = parse(line);
            if (ids == null) {
                if (text.indexOf('\n', next + 1) < 0) return map; // the last line, torn by a crash during its append
                throw new CorruptionException("standby snapshot map line '" + line + "' is damaged (checksum or syntax)", file, at);
            }
            map.put(ids[0], ids[1]);
            at = next + 1;
        }
    }

    /** The ids of a version 2 line, or null when it does not parse or fails its CRC. */
    private static long[] parse(String line) {
        String[] f = line.split(" ", -1);
        if (f.length != 3 || f[2].length() != 8) return null;
        try {
            if (Integer.parseUnsignedInt(f[2], 16) != crc(f[0] + " " + f[1])) return null;
            return new long[] {Long.parseLong(f[0]), Long.parseLong(f[1])};
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static void decodeVersion1(String text, Map<Long, Long> map) {
        for (String line : text.split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length != 2) continue; // a torn last line of a crash
            try {
                map.put(Long.parseLong(f[0]), Long.parseLong(f[1]));
            } catch (NumberFormatException torn) {
                // a line cut short by a crash: the declaration after it never happened
            }
        }
    }

    private static int crc(String ids) {
        CRC32C c = new CRC32C();
        c.update(ids.getBytes(StandardCharsets.US_ASCII));
        return (int) c.getValue();
    }
}
