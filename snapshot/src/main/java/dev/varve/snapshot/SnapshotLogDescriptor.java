package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * The on-disk layout of {@code snapshots.log} ({@link SnapshotLog}): Retro's Start(v), one fixed-size record per
 * declared snapshot, appended in id order after a header. All fields are little-endian.
 *
 * <pre>
 * Header (HEADER_SIZE = 16 bytes):
 *  0                8         12         16
 * +----------------+---------+----------+
 * | magic (long)   | version | crc32c   |
 * +----------------+---------+----------+
 *   crc32c covers bytes [0, 12).
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
 *   <li>1: initial layout.</li>
 * </ul>
 */
final class SnapshotLogDescriptor {
    /** "VARVESN1" as a long (stored little-endian). */
    static final long MAGIC = 0x5641525645534e31L;
    /** Current format version; the only one read. */
    static final int VERSION = 1;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int HEADER_CRC_OFFSET = 12;
    static final int HEADER_SIZE = 16;

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

    /** Byte offset of record {@code i}. */
    static long recordOffset(long i) {
        return HEADER_SIZE + i * RECORD_SIZE;
    }

    /** The header of a new log, ready to write. */
    static ByteBuffer header() {
        ByteBuffer h = ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(MAGIC_OFFSET, MAGIC).putInt(VERSION_OFFSET, VERSION);
        h.putInt(HEADER_CRC_OFFSET, headerCrc(h));
        return h;
    }

    /** Throws a {@link CorruptionException} naming {@code file} unless {@code h} is a snapshot log header of this version. */
    static void checkHeader(ByteBuffer h, Path file) {
        if (h.getLong(MAGIC_OFFSET) != MAGIC || h.getInt(HEADER_CRC_OFFSET) != headerCrc(h))
            throw new CorruptionException("snapshot log header is corrupt", file, MAGIC_OFFSET);
        FormatChecks.refuseUnknownVersion("snapshot log", h.getInt(VERSION_OFFSET), VERSION, file, VERSION_OFFSET);
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
