package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.store.StoreTag;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The on-disk layout of a ranked extent ({@link RankedExtent}): one file {@code level-<t>/extent-<snapshot>.dat} per
 * lazily ranked snapshot, a header and then variable-size records, each one page as byte-range diffs ({@link PageDiff})
 * against a base pre-state, or whole. All fields are little-endian.
 *
 * <pre>
 * Header (headerSize(k) = 44 + 8k bytes, k = levels of the archive when written; 40 + 8k in version 1):
 *  0              8         12         16               24        28    32        36                  36 + 8k    40 + 8k    44 + 8k
 * +--------------+---------+----------+----------------+---------+-----+---------+------------ ... -+----------+----------+
 * | magic (long) | version | pageSize | snapshot (long)| level   | k   | records | pins[k] (longs)   | storeTag | crc32c   |
 * +--------------+---------+----------+----------------+---------+-----+---------+------------ ... -+----------+----------+
 *   crc32c covers every header byte before it.
 *   pins[j - 1]: the lowest address of level j's volume a record's base lies at; Long.MAX_VALUE = none.
 *   storeTag (version 2; version 1 has none, its crc32c at 36 + 8k): the 32-bit fingerprint of the store's id
 *   ({@link StoreTag#of}), 0 when written before a checkpoint marker held it. An extent whose tag is neither 0 nor
 *   this store's is another store's (its records the other store's page versions): recovery refuses it, before the
 *   open changes anything.
 *
 * Record (RECORD_HEADER_SIZE = 24 bytes, then n ranges of 8 bytes, then the payload):
 *  0                8                  16         20         24                             24 + 8n
 * +----------------+------------------+----------+----------+-------- ... ---------------+------------ ... -+
 * | pageId (long)  | base (location)  | n        | crc32c   | n x (offset (4), length (4)) | payload          |
 * +----------------+------------------+----------+----------+-------- ... ---------------+------------ ... -+
 *   base:   ArchiveEncoding.location of the base pre-state; -1 = no base (one range over the whole page).
 *   crc32c: over bytes [0, 20) and everything after the crc field.
 *   payload: the page's bytes of each range, back to back.
 * </pre>
 *
 * <p>Format versions:
 * <ul>
 *   <li>1: initial layout. Still read; it names no store.</li>
 *   <li>2: the store's tag after the pins, so the header is 4 bytes longer; records are as in version 1.</li>
 * </ul>
 */
final class RankedExtentDescriptor {
    /** "VARVEEX1" as a long (stored little-endian). */
    static final long MAGIC = 0x5641525645455831L;
    /** Current format version, written in new extents. */
    static final int VERSION = 2;
    /** Oldest version read: no store tag. */
    static final int MIN_VERSION = 1;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int PAGE_SIZE_OFFSET = 12;
    static final int SNAPSHOT_OFFSET = 16;
    static final int LEVEL_OFFSET = 24;
    static final int LEVELS_OFFSET = 28;
    static final int RECORDS_OFFSET = 32;
    static final int PINS_OFFSET = 36;
    /** The header bytes before the pins: enough to learn how long the header is. */
    static final int FIXED_HEADER_SIZE = PINS_OFFSET;
    /** The most levels a header may name (a bound on what is read before the CRC can be checked). */
    static final int MAX_LEVELS = 64;
    /** A pin that pins nothing. */
    static final long NO_PIN = Long.MAX_VALUE;

    static final int PAGE_ID_OFFSET = 0;
    static final int BASE_OFFSET = 8;
    static final int RANGE_COUNT_OFFSET = 16;
    static final int RECORD_CRC_OFFSET = 20;
    static final int RANGES_OFFSET = 24;
    static final int RECORD_HEADER_SIZE = RANGES_OFFSET;
    /** Bytes of one range: its offset in the page, then its length (ints). */
    static final int RANGE_SIZE = 8;
    static final int RANGE_LENGTH_OFFSET = 4;
    /** The base of a record that holds its page whole. */
    static final long NO_BASE = -1;
    static final String FILE_PREFIX = "extent-";
    static final String FILE_SUFFIX = ".dat";
    /** An extent being written: renamed into place once whole. */
    static final String TEMP_SUFFIX = ".creating";

    private RankedExtentDescriptor() {
    }

    /** Bytes of the header of an extent of the current version of an archive of {@code levels} levels. */
    static int headerSize(int levels) {
        return headerSize(VERSION, levels);
    }

    /** Bytes of the header of an extent of {@code version} of an archive of {@code levels} levels. */
    static int headerSize(int version, int levels) {
        return headerCrcOffset(version, levels) + Integer.BYTES;
    }

    /** Byte offset of the header's CRC in the current version, after the pins of {@code levels} levels and the tag. */
    static int headerCrcOffset(int levels) {
        return headerCrcOffset(VERSION, levels);
    }

    /** Byte offset of the header's CRC in {@code version}: after the pins of {@code levels} levels, and the tag from 2. */
    static int headerCrcOffset(int version, int levels) {
        return storeTagOffset(levels) + (version >= 2 ? Integer.BYTES : 0);
    }

    /** Byte offset of the store's tag (version 2), after the pins of {@code levels} levels. */
    static int storeTagOffset(int levels) {
        return pinOffset(levels + 1);
    }

    /** Byte offset of the pin of volume {@code level} (1..k). */
    static int pinOffset(int level) {
        return PINS_OFFSET + 8 * (level - 1);
    }

    /** The largest record: a header, one range and a whole page. */
    static int maxRecordBytes(int pageSize) {
        return RECORD_HEADER_SIZE + RANGE_SIZE + pageSize;
    }

    /** {@code extent-7.dat} for snapshot 7. */
    static String fileName(long snapshot) {
        return FILE_PREFIX + snapshot + FILE_SUFFIX;
    }

    /** The snapshot id of an extent file's name, or -1 for any other file. */
    static long snapshotOf(String fileName) {
        if (!fileName.startsWith(FILE_PREFIX) || !fileName.endsWith(FILE_SUFFIX)) return -1;
        try {
            return Long.parseLong(fileName.substring(FILE_PREFIX.length(), fileName.length() - FILE_SUFFIX.length()));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Throws a {@link CorruptionException} naming {@code file} unless the fixed part of a header in {@code h} is of
     * this format and page size; returns the number of levels it names.
     */
    static int checkFixedHeader(ByteBuffer h, Path file, int pageSize) {
        if (h.getLong(MAGIC_OFFSET) != MAGIC) throw new CorruptionException("ranked extent header is corrupt", file, MAGIC_OFFSET);
        FormatChecks.refuseUnknownVersion("ranked extent", h.getInt(VERSION_OFFSET), MIN_VERSION, VERSION, file, VERSION_OFFSET);
        if (h.getInt(PAGE_SIZE_OFFSET) != pageSize)
            throw new CorruptionException("ranked extent written with page size " + h.getInt(PAGE_SIZE_OFFSET), file, PAGE_SIZE_OFFSET);
        int k = h.getInt(LEVELS_OFFSET);
        if (k < 1 || k > MAX_LEVELS) throw new CorruptionException("ranked extent header names " + k + " levels", file, LEVELS_OFFSET);
        return k;
    }

    /**
     * The header of an extent of {@code records} records, written by the store whose durable id is {@code storeId} (0:
     * none yet), ready to write; {@code pins} has one entry per level.
     */
    static ByteBuffer header(int pageSize, long snapshot, int level, int records, long[] pins, long storeId) {
        int size = headerSize(pins.length);
        ByteBuffer h = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(MAGIC_OFFSET, MAGIC).putInt(VERSION_OFFSET, VERSION).putInt(PAGE_SIZE_OFFSET, pageSize).putLong(SNAPSHOT_OFFSET, snapshot)
                .putInt(LEVEL_OFFSET, level).putInt(LEVELS_OFFSET, pins.length).putInt(RECORDS_OFFSET, records);
        for (int j = 1; j <= pins.length; j++) h.putLong(pinOffset(j), pins[j - 1]);
        h.putInt(storeTagOffset(pins.length), storeId == 0 ? 0 : StoreTag.of(storeId));
        h.putInt(headerCrcOffset(pins.length), headerCrc(h, pins.length));
        return h;
    }

    /** The CRC of the current version's header, with the pins of {@code levels} levels, at the start of {@code h}. */
    static int headerCrc(ByteBuffer h, int levels) {
        return headerCrc(h, VERSION, levels);
    }

    /** The CRC of the header of {@code version}, with the pins of {@code levels} levels, at the start of {@code h}. */
    static int headerCrc(ByteBuffer h, int version, int levels) {
        return FormatChecks.crc32c(h, 0, headerCrcOffset(version, levels));
    }

    /**
     * Why the extent whose (checked) header of {@code version} with {@code levels} levels is {@code h} is another
     * store's than the one whose durable id is {@code storeId}, or null when it is not known to be (no durable id yet,
     * or an extent that names no store).
     */
    static String foreign(ByteBuffer h, int version, int levels, long storeId) {
        if (version < 2) return null;
        String why = StoreTag.foreign("ranked extent", h.getInt(storeTagOffset(levels)), storeId);
        return why == null ? null
                : why + ", and its pages would be read as this store's snapshot; restore the store with its archive as a whole from one backup";
    }

    /** The CRC of the record of {@code size} bytes at {@code at} of heap buffer {@code b}. */
    static int recordCrc(ByteBuffer b, int at, int size) {
        CRC32C c = new CRC32C();
        c.update(b.array(), b.arrayOffset() + at, RECORD_CRC_OFFSET);
        c.update(b.array(), b.arrayOffset() + at + RECORD_HEADER_SIZE, size - RECORD_HEADER_SIZE);
        return (int) c.getValue();
    }

    /** Byte offset, in a record, of range i (its offset field; its length is at + RANGE_LENGTH_OFFSET). */
    static int rangeOffset(int i) {
        return RANGES_OFFSET + RANGE_SIZE * i;
    }
}
