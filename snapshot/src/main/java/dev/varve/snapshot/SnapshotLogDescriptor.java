package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.store.StoreTag;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * The on-disk layout of {@code snapshots.log} ({@link SnapshotLog}): Retro's Start(v), one fixed-size record per
 * declared snapshot (and one per rank change), appended in id order after a header and, from version 2, a base block.
 * A record's position is its index among all the records the log was ever appended; the log holds those from the
 * base block's {@code first} on. The older ones were compacted away, except, from version 3, the {@code retained}
 * records that follow the base block: the declaration and latest rank change of each snapshot below the
 * {@code horizon} that was live at the compaction. Every snapshot below the horizon without a retained record was
 * dropped, and so was one whose later records the log holds unless it has a retained record. All fields are
 * little-endian.
 *
 * <pre>
 * Header (HEADER_SIZE = 16 bytes):
 *  0                8         12         16
 * +----------------+---------+----------+
 * | magic (long)   | version | crc32c   |
 * +----------------+---------+----------+
 *   crc32c covers bytes [0, 12).
 *
 * Base block (BASE_SIZE = 48 bytes, from version 2):
 *  0             8               16                     24               32         36         40        44         48
 * +-------------+---------------+----------------------+----------------+----------+----------+---------+----------+
 * | first(long) | horizon(long) | horizonMillis (long) | retained (long)| storeTag | reserved | crc32c  | reserved |
 * +-------------+---------------+----------------------+----------------+----------+----------+---------+----------+
 *   crc32c covers bytes [0, 40). retained: from version 3 (0 before), the records between the base block and the
 *   record at position first, which count no position. storeTag: from version 4 (reserved, 0, before), the 32-bit
 *   fingerprint of the store's id ({@link StoreTag#of}), 0 when the log was written before a checkpoint marker held
 *   the id (a new store's log until its first compaction); a log whose tag is neither 0 nor this store's is another
 *   store's, refused at open and reported by verify.
 *
 * Record (RECORD_SIZE = 48 bytes):
 *  0            8       12         16                24        32          40        44         48
 * +------------+-------+----------+-----------------+---------+-----------+---------+----------+
 * | id (long)  | rank  | reserved | declaredMillis  | start   | walLsn    | crc32c  | reserved |
 * +------------+-------+----------+-----------------+---------+-----------+---------+----------+
 *   crc32c covers bytes [0, 40).
 *   start:  the Maplog position of the snapshot's first mapping (Start(v)).
 *   walLsn: where the snapshot's snaprec sits in the WAL.
 * </pre>
 *
 * <p>Format versions:
 * <ul>
 *   <li>1: initial layout: no base block, the records start at offset 16 with position 0. Still read; rewritten as
 *       version 2 by the first compaction.</li>
 *   <li>2: the base block, so that the records of long-dropped snapshots can be compacted away while positions (which
 *       checkpoint marks count) stay what they were.</li>
 *   <li>3: the retained records, so that a snapshot kept for good does not keep the records of every snapshot
 *       declared and dropped after it: a compaction removes dropped snapshots wherever they lie, and keeps the live
 *       ones below the horizon outside the positions. A version 2 log reads as one with none; it is rewritten as
 *       version 3 by the first compaction.</li>
 *   <li>4: the base block records the store's tag. A version 2 or 3 log names no store; it is read, and appended to,
 *       as it is, and rewritten as version 4 by the first compaction.</li>
 * </ul>
 */
final class SnapshotLogDescriptor {
    /** "VARVESN1" as a long (stored little-endian). */
    static final long MAGIC = 0x5641525645534e31L;
    /** The format version written. */
    static final int VERSION = 4;
    /** The oldest format version read. */
    static final int MIN_VERSION = 1;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int HEADER_CRC_OFFSET = 12;
    static final int HEADER_SIZE = 16;

    static final int FIRST_OFFSET = 0;
    static final int HORIZON_OFFSET = 8;
    static final int HORIZON_MILLIS_OFFSET = 16;
    static final int RETAINED_OFFSET = 24;
    /** Version 4: the store's tag, in what was reserved before. */
    static final int STORE_TAG_OFFSET = 32;
    static final int BASE_CRC_OFFSET = 40;
    static final int BASE_SIZE = 48;

    static final int ID_OFFSET = 0;
    static final int RANK_OFFSET = 8;
    static final int DECLARED_MILLIS_OFFSET = 16;
    static final int START_OFFSET = 24;
    static final int WAL_LSN_OFFSET = 32;
    static final int RECORD_CRC_OFFSET = 40;
    static final int RECORD_SIZE = 48;

    static final String FILE = "snapshots.log";

    private SnapshotLogDescriptor() {
    }

    /** Bytes before the first record in a log of {@code version}: the header, and the base block from version 2. */
    static int recordsFrom(int version) {
        return version == 1 ? HEADER_SIZE : HEADER_SIZE + BASE_SIZE;
    }

    /**
     * Byte offset of the record at {@code position} in a log of {@code version} whose first record held is at
     * {@code first}, after {@code retained} retained records.
     */
    static long recordOffset(int version, long first, long retained, long position) {
        return recordsFrom(version) + (retained + position - first) * RECORD_SIZE;
    }

    /** Byte offset of record {@code i} in a log of the current version never compacted. */
    static long recordOffset(long i) {
        return recordOffset(VERSION, 0, 0, i);
    }

    /**
     * The header and base block of a log of the current version holding {@code retained} retained records, then the
     * records from position {@code first} on, written by the store whose durable id is {@code storeId} (0: none yet).
     */
    static ByteBuffer header(long first, long horizon, long horizonMillis, long retained, long storeId) {
        ByteBuffer h = ByteBuffer.allocate(HEADER_SIZE + BASE_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(MAGIC_OFFSET, MAGIC).putInt(VERSION_OFFSET, VERSION);
        h.putInt(HEADER_CRC_OFFSET, headerCrc(h));
        h.putLong(HEADER_SIZE + FIRST_OFFSET, first).putLong(HEADER_SIZE + HORIZON_OFFSET, horizon).putLong(HEADER_SIZE + HORIZON_MILLIS_OFFSET, horizonMillis)
                .putLong(HEADER_SIZE + RETAINED_OFFSET, retained).putInt(HEADER_SIZE + STORE_TAG_OFFSET, storeId == 0 ? 0 : StoreTag.of(storeId));
        h.putInt(HEADER_SIZE + BASE_CRC_OFFSET, FormatChecks.crc32c(h, HEADER_SIZE, HEADER_SIZE + BASE_CRC_OFFSET));
        return h;
    }

    /**
     * Throws a {@link CorruptionException} naming {@code file} unless {@code h} is a snapshot log header of a version this
     * build reads; returns that version.
     */
    static int checkHeader(ByteBuffer h, Path file) {
        if (h.getLong(MAGIC_OFFSET) != MAGIC || h.getInt(HEADER_CRC_OFFSET) != headerCrc(h))
            throw new CorruptionException("snapshot log header is corrupt", file, MAGIC_OFFSET);
        int version = h.getInt(VERSION_OFFSET);
        FormatChecks.refuseUnknownVersion("snapshot log", version, MIN_VERSION, VERSION, file, VERSION_OFFSET);
        return version;
    }

    /**
     * Throws a {@link CorruptionException} naming {@code file} unless the base block at {@code at} of {@code b} matches
     * its CRC and, in a log of {@code version}, names no store or the one whose durable id is {@code storeId} (0: none
     * yet, no check).
     */
    static void checkBase(ByteBuffer b, int at, Path file, int version, long storeId) {
        if (b.getInt(at + BASE_CRC_OFFSET) != FormatChecks.crc32c(b, at, at + BASE_CRC_OFFSET))
            throw new CorruptionException("snapshot log base block is corrupt", file, HEADER_SIZE);
        String foreign = foreign(version, b.getInt(at + STORE_TAG_OFFSET), storeId);
        if (foreign != null) throw new CorruptionException(foreign, file, at + STORE_TAG_OFFSET);
    }

    /**
     * Why the log whose header and base block {@code h} holds is another store's than the one whose durable id is
     * {@code storeId}, or null when it is not known to be: a damaged header or base block (the check reports those),
     * no durable id yet, or a log that names no store.
     */
    static String foreign(ByteBuffer h, long storeId) {
        if (h.limit() < HEADER_SIZE + BASE_SIZE || h.getLong(MAGIC_OFFSET) != MAGIC || h.getInt(HEADER_CRC_OFFSET) != headerCrc(h)
                || h.getInt(HEADER_SIZE + BASE_CRC_OFFSET) != FormatChecks.crc32c(h, HEADER_SIZE, HEADER_SIZE + BASE_CRC_OFFSET)) return null;
        return foreign(h.getInt(VERSION_OFFSET), h.getInt(HEADER_SIZE + STORE_TAG_OFFSET), storeId);
    }

    private static String foreign(int version, int tag, long storeId) {
        if (version < 4) return null; // the field was reserved
        String why = StoreTag.foreign("snapshot log", tag, storeId);
        return why == null ? null : why + ", and its snapshots would be read as this store's; restore the store with its archive as a whole from one backup";
    }

    static int headerCrc(ByteBuffer h) {
        return FormatChecks.crc32c(h, 0, HEADER_CRC_OFFSET);
    }

    /** The record of {@code s}, ready to write. */
    static ByteBuffer record(SnapshotRecord s) {
        ByteBuffer r = ByteBuffer.allocate(RECORD_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        r.putLong(ID_OFFSET, s.id()).putInt(RANK_OFFSET, s.rank()).putLong(DECLARED_MILLIS_OFFSET, s.declaredMillis())
                .putLong(START_OFFSET, s.start()).putLong(WAL_LSN_OFFSET, s.walLsn());
        r.putInt(RECORD_CRC_OFFSET, FormatChecks.crc32c(r, 0, RECORD_CRC_OFFSET));
        return r;
    }

    /** True when the record at {@code at} of heap buffer {@code b} matches its CRC. */
    static boolean intact(ByteBuffer b, int at) {
        return b.getInt(at + RECORD_CRC_OFFSET) == FormatChecks.crc32c(b, at, at + RECORD_CRC_OFFSET);
    }

    /** The snapshot the (checked) record at {@code at} of {@code b} declares. */
    static SnapshotRecord decode(ByteBuffer b, int at) {
        return new SnapshotRecord(b.getLong(at + ID_OFFSET), b.getInt(at + RANK_OFFSET), b.getLong(at + DECLARED_MILLIS_OFFSET),
                b.getLong(at + START_OFFSET), b.getLong(at + WAL_LSN_OFFSET));
    }
}
