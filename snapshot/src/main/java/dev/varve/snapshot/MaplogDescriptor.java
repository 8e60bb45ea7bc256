package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.store.StoreTag;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The on-disk layout of the Maplog format ({@link MaplogFile}): an append-only log of fixed 32-byte entries of three
 * longs, each with its own CRC32C. Six logs share it, told apart by the {@link Kind} in their header; what the three
 * fields mean is the kind's. All fields are little-endian.
 *
 * <p>A log lives in part files: the first is {@code <name>}, every later one {@code <name>.<position of its first
 * entry>} ({@link #partFileName}), each with its own header. An entry's position is its global index.
 *
 * <pre>
 * Header (HEADER_SIZE = 32 bytes):
 *  0                8         12         16         20            24         28         32
 * +----------------+---------+----------+----------+-------------+----------+----------+
 * | magic (long)   | version | kind     | level    | nodeEntries | storeTag | crc32c   |
 * +----------------+---------+----------+----------+-------------+----------+----------+
 *   crc32c covers bytes [0, 28).
 *   kind:        the stored code of the log's {@link Kind}.
 *   level:       the Skippy level (0 = the Maplog itself) for MAPPINGS and UPLINKS; -1 for every other kind.
 *   nodeEntries: the Skippy node size the archive was written with (the same in every log of an archive).
 *   storeTag:    (version 2) the 32-bit fingerprint of the store's id ({@link StoreTag#of}), 0 when the part was
 *                created before a checkpoint marker held the id; reserved (0) in version 1. A part whose tag is
 *                neither 0 nor this store's is another store's: its mappings would name the other store's Pagelog
 *                records as this store's history, so open refuses it and verify reports it.
 *
 * Entry (ENTRY_SIZE = 32 bytes):
 *  0                8                16               24         28         32
 * +----------------+----------------+----------------+----------+----------+
 * | a (long)       | b (long)       | c (long)       | crc32c   | reserved |
 * +----------------+----------------+----------------+----------+----------+
 *   crc32c covers bytes [0, 24).
 * </pre>
 *
 * <p>Format versions:
 * <ul>
 *   <li>1: initial layout. The kind MARKS was added later without a version change: archives written before it
 *       store their checkpoint marks under the UPLINKS code at level -1, which no Skippy uplink log uses, and are
 *       still read ({@link Kind#accepts}).</li>
 *   <li>2: the header records the store's tag in what was the reserved field. Entries are as in version 1, and a log
 *       may hold parts of both versions: version 1 parts name no store and are read as they are.</li>
 * </ul>
 */
final class MaplogDescriptor {
    /** "VARVMAPL" as a long (stored little-endian). */
    static final long MAGIC = 0x564152564d41504cL;
    /** Current format version, written in new parts. */
    static final int VERSION = 2;
    /** Oldest version read: its header names no store. */
    static final int MIN_VERSION = 1;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int KIND_OFFSET = 12;
    static final int LEVEL_OFFSET = 16;
    static final int NODE_ENTRIES_OFFSET = 20;
    /** Version 2: the store's tag, reserved (0) before. */
    static final int STORE_TAG_OFFSET = 24;
    static final int HEADER_CRC_OFFSET = 28;
    static final int HEADER_SIZE = 32;

    static final int A_OFFSET = 0;
    static final int B_OFFSET = 8;
    static final int C_OFFSET = 16;
    static final int ENTRY_CRC_OFFSET = 24;
    static final int ENTRY_SIZE = 32;

    private static final int DROP_RANK_SHIFT = 8;
    private static final long DROP_CAUSE_MASK = 0xff;

    /** The header level of the logs that are not a Skippy level. */
    static final int NO_LEVEL = -1;

    /**
     * The logs of the Maplog format and what their fields mean. The {@link #code} is stored in the header; each
     * kind keeps the code it was first written with.
     */
    enum Kind {
        /**
         * A Maplog (Skippy level 0) or a Skippy level above it, one mapping per entry in snapshot order (I7): a = page
         * id, b = snapshot, c = the pre-state's location ({@link ArchiveEncoding#location}: volume level, address).
         */
        MAPPINGS(1),
        /**
         * A Skippy level's uplinks, one per filled node of the level: a = start and b = end of the node's
         * first-encountered mappings in the level above, c = 0.
         */
        UPLINKS(2),
        /** drops.log, one per dropped snapshot: a = snapshot id, b = when (epoch millis), c = {@link #dropReason}. */
        DROPS(3),
        /**
         * moves.log, one per lazy-ranking copy: a = checkpoint mark LSN, b = snapshot id, c = the target
         * ({@link ArchiveEncoding#moveTarget}: level, the snapshot's Start there, whether an extent was written). A
         * live snapshot's latest copy written again by a compaction has a = the LSN of the mark before it + 1.
         */
        MOVES(4),
        /**
         * joins.log, per rank change one per level: a = WAL LSN of the change, b = snapshot id, c =
         * {@link ArchiveEncoding#location}(level, that level's Maplog position then). A live snapshot's latest
         * entries written again by a compaction have a = the LSN of the mark before it.
         */
        JOINS(5),
        /**
         * archive-marks.log: a = checkpoint mark LSN, b = key, c = value ({@link ArchiveMarksDescriptor}). Stored as
         * 6; marks written before this kind existed are stored as UPLINKS at level -1 and still read.
         */
        MARKS(6);

        /** The code stored in the header. */
        final int code;

        Kind(int code) {
            this.code = code;
        }

        /**
         * True when a header storing {@code storedCode} and {@code storedLevel} is a log of this kind at
         * {@code level}. Checkpoint marks of archives written before MARKS existed are stored as UPLINKS, level -1.
         */
        boolean accepts(int storedCode, int storedLevel, int level) {
            return storedLevel == level && (storedCode == code || isLegacyMarks(storedCode, storedLevel));
        }

        /** True for the header of checkpoint marks written before they had a kind of their own. */
        boolean isLegacyMarks(int storedCode, int storedLevel) {
            return this == MARKS && storedCode == UPLINKS.code && storedLevel == NO_LEVEL;
        }
    }

    /** A drop entry's c: the cause of the drop in the low byte, the snapshot's rank above it. */
    static long dropReason(long cause, int rank) {
        return cause | (long) rank << DROP_RANK_SHIFT;
    }

    static long dropCause(long reason) {
        return reason & DROP_CAUSE_MASK;
    }

    static long dropRank(long reason) {
        return reason >>> DROP_RANK_SHIFT;
    }

    private MaplogDescriptor() {
    }

    /** The part file of log {@code name} whose first entry is at {@code first}. */
    static String partFileName(String name, long first) {
        return first == 0 ? name : name + "." + first;
    }

    /** The position of the first entry of the part file {@code fileName} of log {@code name}; -1 for other files. */
    static long firstOf(String fileName, String name) {
        if (fileName.equals(name)) return 0;
        if (!fileName.startsWith(name + ".")) return -1;
        try {
            return Long.parseLong(fileName.substring(name.length() + 1));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** Byte offset, in its part file, of the entry {@code index} entries after the part's first. */
    static long entryOffset(long index) {
        return HEADER_SIZE + index * ENTRY_SIZE;
    }

    /**
     * The header of a log of {@code kind} at {@code level}, written by the store whose durable id is {@code storeId}
     * (0: none yet), ready to write.
     */
    static ByteBuffer header(Kind kind, int level, int nodeEntries, long storeId) {
        ByteBuffer h = ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(MAGIC_OFFSET, MAGIC).putInt(VERSION_OFFSET, VERSION).putInt(KIND_OFFSET, kind.code).putInt(LEVEL_OFFSET, level)
                .putInt(NODE_ENTRIES_OFFSET, nodeEntries).putInt(STORE_TAG_OFFSET, storeId == 0 ? 0 : StoreTag.of(storeId));
        h.putInt(HEADER_CRC_OFFSET, headerCrc(h));
        return h;
    }

    /**
     * Throws a {@link CorruptionException} naming {@code file} unless {@code h} is the header of a log of {@code kind}
     * at {@code level} in a format version this build reads, of the store whose durable id is {@code storeId} (0: none
     * yet, no check) or of none. The node size is checked by the caller: a mismatch is a configuration error, not damage.
     */
    static void checkHeader(ByteBuffer h, Path file, Kind kind, int level, long storeId) {
        if (h.getInt(HEADER_CRC_OFFSET) != headerCrc(h) || h.getLong(MAGIC_OFFSET) != MAGIC)
            throw new CorruptionException("archive file header is corrupt", file, MAGIC_OFFSET);
        FormatChecks.refuseUnknownVersion("archive log", h.getInt(VERSION_OFFSET), MIN_VERSION, VERSION, file, VERSION_OFFSET);
        if (!kind.accepts(h.getInt(KIND_OFFSET), h.getInt(LEVEL_OFFSET), level))
            throw new CorruptionException("archive file holds kind " + h.getInt(KIND_OFFSET) + " level " + h.getInt(LEVEL_OFFSET) + ", expected "
                    + kind + " (" + kind.code + ") level " + level, file, KIND_OFFSET);
        String foreign = foreign(h, storeId);
        if (foreign != null) throw new CorruptionException(foreign, file, STORE_TAG_OFFSET);
    }

    /**
     * Why the log part whose (checked) header is {@code h} is another store's than the one whose durable id is
     * {@code storeId}, or null when it is not known to be (no durable id yet, or a part that names no store).
     */
    static String foreign(ByteBuffer h, long storeId) {
        if (h.getInt(VERSION_OFFSET) < 2) return null; // the field was reserved
        String why = StoreTag.foreign("archive log", h.getInt(STORE_TAG_OFFSET), storeId);
        return why == null ? null : why + ", and its entries would be read as this store's; restore the store with its archive as a whole from one backup";
    }

    static int headerCrc(ByteBuffer h) {
        return FormatChecks.crc32c(h, 0, HEADER_CRC_OFFSET);
    }

    /** Writes the entry (a, b, c) with its CRC, computed with {@code crc}, at {@code at} of heap buffer {@code buf}. */
    static void encode(ByteBuffer buf, int at, long a, long b, long c, CRC32C crc) {
        buf.putLong(at + A_OFFSET, a).putLong(at + B_OFFSET, b).putLong(at + C_OFFSET, c);
        buf.putLong(at + ENTRY_CRC_OFFSET, 0); // CRC and reserved
        buf.putInt(at + ENTRY_CRC_OFFSET, entryCrc(buf, at, crc));
    }

    /** The CRC of the entry at {@code at} of heap buffer {@code b}, computed with {@code crc}. */
    static int entryCrc(ByteBuffer b, int at, CRC32C crc) {
        crc.reset();
        crc.update(b.array(), b.arrayOffset() + at, ENTRY_CRC_OFFSET);
        return (int) crc.getValue();
    }
}
