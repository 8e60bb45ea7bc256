package dev.varve.snapshot;

import dev.varve.config.ConfigLimits;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.StorageException;
import dev.varve.core.store.StoreTag;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The on-disk layout of a Pagelog volume ({@link Pagelog}): segment files {@code pagelog-<segment, 8 digits>.log} in a
 * level's directory, each a header and then fixed-size records of one archived pre-state each. All fields are
 * little-endian. A record's address is its global index: segment = address / recordsPerSegment, slot = the rest.
 *
 * <pre>
 * Segment header (HEADER_SIZE = 32 bytes):
 *  0                8         12         16                24                  28         32
 * +----------------+---------+----------+-----------------+-------------------+----------+
 * | magic (long)   | version | pageSize | segment (long)  | recordsPerSegment | crc32c   |
 * +----------------+---------+----------+-----------------+-------------------+----------+
 *   crc32c covers bytes [0, 28). recordsPerSegment: what the volume's archiveSegmentSize makes of a segment, which
 *   maps every address to its segment; 0 in segments written before it was recorded (a reserved field then), whose
 *   size only a full segment shows.
 *   Version 5 splits the segment field: segment (int, 16) | storeTag (int, 20). Segment numbers stay below 2^31 - 1,
 *   so the long's upper half was always 0; it now holds the 32-bit fingerprint of the store's id
 *   ({@link StoreTag#of}; the header has no room for the whole id), 0 when the id was not yet durable in a
 *   checkpoint marker when the segment was created. A segment whose tag is neither 0 nor this store's is another
 *   store's: open refuses it and verify reports it, rather than serving its records as this store's history.
 *
 * Record (RECORD_HEADER_SIZE = 32 bytes, then the body; pageSize + 32 bytes in all):
 *  0                8                16               24         28         32
 * +----------------+----------------+----------------+----------+----------+------------ ... -+
 * | pageId (long)  | hi (long)      | lo (long)      | crc32c   | kind     | body (pageSize)    |
 * +----------------+----------------+----------------+----------+----------+------------ ... -+
 *   crc32c covers bytes [0, 24) and [28, end) (version 2: [0, 24) and the body; its kind field is reserved, 0).
 *   (lo, hi]: no snapshot outside it needs the record — hi is the latest snapshot when it was captured, lo its
 *   page's SavedAfter at the volume's level before. For a diff pack, the widest (lo, hi] of its entries.
 *   kind WHOLE (0): the body is the page image, field 0 the page id.
 *   kind PACK (1): the body is a diff pack; field 0 is NO_PAGE (-1).
 *   A diff's chain never leaves its segment: every base and head of an entry lies in the entry's segment.
 *
 * Diff pack body: an 8-byte header, then entries, each at an 8-aligned offset in the body:
 *  0          4           8
 * +----------+-----------+--- entries ... (zeroes after the last)
 * | count    | usedBytes |
 * +----------+-----------+
 *
 * Entry (RANGE_ENTRY: a 36-byte header, then its ranges and their bytes, zero-padded to a multiple of 8):
 *  0         8              16             24       26        28         32          36
 * +---------+--------------+--------------+--------+---------+----------+-----------+-- ... -+
 * | pageId  | base address | head record  | ranges | payload | page crc | entry crc | ranges  |
 * +---------+--------------+--------------+--------+---------+----------+-----------+-- ... -+
 *   then ranges x (offset u16 | length u16), ascending and apart, then the payload: the bytes of each range in turn.
 *   The pre-state is the version at base address (an earlier whole record or entry of the same page in this
 *   volume) with the ranges overwritten by the payload. head record: the whole record the chain from here ends at.
 *   page crc: the CRC32C of the rebuilt page, checked after the chain is applied; entry crc covers [0, 32) and
 *   [36, the entry's end), so one entry is read and checked without its record.
 *
 * Version 3 entry (MASK_ENTRY: a 56-byte header, then the chunks of its mask, chunk = pageSize / 64, ascending):
 * | pageId (8) | lo (8) | hi (8) | base address (8) | head record (8) | changed mask (8) | page crc (4) | entry crc (4) |
 *   entry crc covers [0, 52) and the chunks; lo and hi, the entry's own (lo, hi], were never read.
 *
 * Address (a long): bits 0..39 the record's index; bits 40..55 an entry's offset in the body / 8, 0 for the whole
 * record. Version 2 addresses are record indexes.
 * </pre>
 *
 * <p>Format versions:
 * <ul>
 *   <li>1: records of pageId | snapshot | crc32c | reserved | image (24-byte header). No longer read: a segment of
 *       this version is refused by name.</li>
 *   <li>2: records carry (lo, hi] in place of the snapshot, so reclamation can decide by whole segments.</li>
 *   <li>3: records carry a kind, covered by the CRC: a whole page or a pack of diffs (diff capture), an entry carrying
 *       the whole chunks (pageSize / 64 bytes) its page's change tracking marked. Version 2 segments are read as they
 *       are (every record whole).</li>
 *   <li>4: an entry carries byte ranges (offset, length) instead of 64 chunks: the runs of the chunks its page's
 *       writes touched, which are finer (pageSize / 512 bytes). Version 2 and 3 segments are read as they are; new
 *       segments are written as version 4, and a volume whose last segment is older stores whole pages until it
 *       starts a new one.</li>
 *   <li>5: the header records the store's tag in the upper half of the segment field. Records are as in version 4.
 *       Earlier versions name no store and are read as they are.</li>
 * </ul>
 */
final class PagelogDescriptor {
    /** "VARVEPL1" as a long (stored little-endian). */
    static final long MAGIC = 0x5641525645504c31L;
    /** Current format version, written in new segments. */
    static final int VERSION = 5;
    /** The first version whose entries carry ranges, as every later one's do: a volume packs diffs into such a segment. */
    static final int RANGE_ENTRY_VERSION = 4;
    /** Oldest version read: its records are all whole pages and their CRC leaves the kind field out. */
    static final int MIN_VERSION = 2;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int PAGE_SIZE_OFFSET = 12;
    static final int SEGMENT_OFFSET = 16;
    /** Version 5: the store's tag, the upper half of the segment field before. */
    static final int STORE_TAG_OFFSET = 20;
    static final int RECORDS_PER_SEGMENT_OFFSET = 24;
    static final int HEADER_CRC_OFFSET = 28;
    static final int HEADER_SIZE = 32;

    static final int PAGE_ID_OFFSET = 0;
    static final int HI_OFFSET = 8;
    static final int LO_OFFSET = 16;
    static final int RECORD_CRC_OFFSET = 24;
    static final int KIND_OFFSET = 28;
    static final int IMAGE_OFFSET = 32;
    static final int KIND_WHOLE = 0;
    static final int KIND_PACK = 1;
    /** Field 0 of a pack: it is no single page's. */
    static final long NO_PAGE = -1;

    static final int PACK_COUNT_OFFSET = 0;
    static final int PACK_USED_OFFSET = 4;
    static final int PACK_HEADER_SIZE = 8;

    /** Where a diff entry's fields lie: {@link #MASK_ENTRY} in version 3, {@link #RANGE_ENTRY} after. */
    record EntryLayout(int base, int head, int pageCrc, int crc, int headerSize) {
    }

    static final EntryLayout MASK_ENTRY = new EntryLayout(24, 32, 48, 52, 56);
    static final EntryLayout RANGE_ENTRY = new EntryLayout(8, 16, 28, 32, 36);
    /** Every version's entry starts with its page id. */
    static final int ENTRY_PAGE_ID_OFFSET = 0;
    /** Version 3: the entry's (lo, hi] and its changed mask. */
    static final int ENTRY_LO_OFFSET = 8;
    static final int ENTRY_HI_OFFSET = 16;
    static final int ENTRY_CHANGED_OFFSET = 40;
    /** Version 4: how many ranges (u16) and bytes of payload (u16). */
    static final int ENTRY_RANGES_OFFSET = 24;
    static final int ENTRY_PAYLOAD_OFFSET = 26;
    /** Bytes of a range: offset and length, u16 each. */
    static final int RANGE_ENTRY_BYTES = 4;
    /** Chunks of a version 3 entry's mask: each pageSize / 64 bytes. */
    static final int MASK_ENTRY_CHUNKS = Long.SIZE;
    /** The last version whose entries carry a changed mask. */
    static final int MASK_ENTRY_VERSION = 3;

    /** An address's record index bits; the entry offset / 8 sits above them. */
    static final int RECORD_BITS = 40;
    static final long RECORD_MASK = (1L << RECORD_BITS) - 1;
    /** Bytes of record header before the image. */
    static final int RECORD_HEADER_SIZE = IMAGE_OFFSET;
    /** The part of a record header that reclamation reads without the image: pageId, hi, lo. */
    static final int RANGE_BYTES = RECORD_CRC_OFFSET;

    static final String FILE_PREFIX = "pagelog-";
    static final String FILE_SUFFIX = ".log";

    private PagelogDescriptor() {
    }

    /** {@code pagelog-00000007.log} for segment 7. */
    static String fileName(int segment) {
        return String.format("%s%08d%s", FILE_PREFIX, segment, FILE_SUFFIX);
    }

    /** The segment number in a segment file's name; a {@link CorruptionException} for any other file. */
    static int segmentOf(Path file) {
        String n = file.getFileName().toString();
        try {
            return Integer.parseInt(n.substring(FILE_PREFIX.length(), n.length() - FILE_SUFFIX.length()));
        } catch (RuntimeException e) {
            throw new CorruptionException("unexpected file in the archive: " + n, file, 0);
        }
    }

    /** Bytes of one record of a volume of {@code pageSize} pages. */
    static int recordBytes(int pageSize) {
        return RECORD_HEADER_SIZE + pageSize;
    }

    /**
     * The header of segment {@code segment} of a volume of {@code pageSize} pages, written by the store whose durable
     * id is {@code storeId} (0: none yet), ready to write.
     */
    static ByteBuffer header(int pageSize, int segment, int recordsPerSegment, long storeId) {
        ByteBuffer h = ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(MAGIC_OFFSET, MAGIC).putInt(VERSION_OFFSET, VERSION).putInt(PAGE_SIZE_OFFSET, pageSize).putInt(SEGMENT_OFFSET, segment)
                .putInt(STORE_TAG_OFFSET, storeId == 0 ? 0 : StoreTag.of(storeId)).putInt(RECORDS_PER_SEGMENT_OFFSET, recordsPerSegment);
        h.putInt(HEADER_CRC_OFFSET, headerCrc(h));
        return h;
    }

    /**
     * Throws a {@link CorruptionException} naming {@code file} unless {@code h} is the header of that segment, and a
     * {@link StorageException} naming the setting when it was written with another pageSize or archiveSegmentSize, and
     * a {@link CorruptionException} when it names another store than the one whose durable id is {@code storeId} (0:
     * none yet, no check); returns its format version.
     */
    static int checkHeader(ByteBuffer h, Path file, int pageSize, int segment, int recordsPerSegment, long storeId) {
        if (h.getInt(HEADER_CRC_OFFSET) != headerCrc(h) || h.getLong(MAGIC_OFFSET) != MAGIC)
            throw new CorruptionException("Pagelog segment header is corrupt", file, MAGIC_OFFSET);
        int version = h.getInt(VERSION_OFFSET);
        FormatChecks.refuseUnknownVersion("Pagelog", version, MIN_VERSION, VERSION, file, VERSION_OFFSET);
        if (h.getInt(PAGE_SIZE_OFFSET) != pageSize)
            throw PagelogDescriptor.otherPageSize("Pagelog", h.getInt(PAGE_SIZE_OFFSET), pageSize, file);
        long number = version >= VERSION ? h.getInt(SEGMENT_OFFSET) : h.getLong(SEGMENT_OFFSET);
        if (number != segment)
            throw new CorruptionException("Pagelog segment holds number " + number, file, SEGMENT_OFFSET);
        String foreign = foreign(h, storeId);
        if (foreign != null) throw new CorruptionException(foreign, file, STORE_TAG_OFFSET);
        int written = h.getInt(RECORDS_PER_SEGMENT_OFFSET);
        if (written != 0 && written != recordsPerSegment)
            throw new StorageException("Pagelog segment holds " + written + " records a segment, written with an archiveSegmentSize of "
                    + sizesGiving(written, pageSize) + ", but the store's archiveSegmentSize gives " + recordsPerSegment
                    + "; an existing archive keeps its segment size: set archiveSegmentSize to one of those", file);
        return version;
    }

    /**
     * Why the segment whose (checked) header is {@code h} is another store's than the one whose durable id is
     * {@code storeId}, or null when it is not known to be (no durable id yet, or a segment that names no store).
     */
    static String foreign(ByteBuffer h, long storeId) {
        if (h.getInt(VERSION_OFFSET) < VERSION) return null;
        String why = StoreTag.foreign("Pagelog segment", h.getInt(STORE_TAG_OFFSET), storeId);
        return why == null ? null : why + ", and its records would be read as this store's history; restore the store with its archive as a whole from one backup";
    }

    /**
     * The records per segment a header whose magic and CRC check out records; 0 when it is not such a header or
     * records none (written before the field was).
     */
    static int recordedRecordsPerSegment(ByteBuffer h) {
        if (h.getLong(MAGIC_OFFSET) != MAGIC || h.getInt(HEADER_CRC_OFFSET) != headerCrc(h)) return 0;
        return Math.max(0, h.getInt(RECORDS_PER_SEGMENT_OFFSET));
    }

    /**
     * The archiveSegmentSize values that give segments of {@code records} records, as an operator sets them: the range,
     * and the power of two in it (what a store usually sets, 64 MiB by default).
     */
    static String sizesGiving(long records, int pageSize) {
        long lo = segmentBytes(records, pageSize);
        long hi = largestSegmentBytes(records, pageSize);
        long round = Long.highestOneBit(hi);
        return lo + " to " + hi + " bytes" + (round >= lo ? " (" + (round >= (1L << 20) ? (round >> 20) + " MiB" : (round >> 10) + " KiB") + ")" : "");
    }

    /** The smallest archiveSegmentSize that gives segments of {@code records} records of {@code pageSize} pages. */
    static long segmentBytes(long records, int pageSize) {
        return HEADER_SIZE + records * recordBytes(pageSize);
    }

    /**
     * The largest archiveSegmentSize (within the setting's range) that gives segments of {@code records} records: at
     * least the size the store was configured with, so it passes the setting's checks as that one did.
     */
    static long largestSegmentBytes(long records, int pageSize) {
        return Math.min(ConfigLimits.ARCHIVE_SEGMENT_SIZE_MAX, segmentBytes(records + 1, pageSize) - 1);
    }

    /**
     * A header whose CRC checks out but names another page size is a store opened with another pageSize, not damage:
     * said as the page files say it, naming the setting, so the operator changes the configuration instead of hunting
     * for corruption (the archive is read before the page files, so this is the message a store with snapshots gets).
     */
    static StorageException otherPageSize(String what, int written, int configured, Path file) {
        return new StorageException(what + " was written with pageSize " + written + " but the store is configured with " + configured, file);
    }

    /**
     * A segment's record count against the archiveSegmentSize the store is opened with, whose records per segment map
     * every Pagelog address to its segment: every segment but the last is full, none holds more. A store reopened with
     * another archiveSegmentSize would read each address from the wrong place and its reclamation would delete
     * segments still mapped; refused here, before anything is written. More records than a segment holds can only be
     * another setting; fewer in a segment that is not the last may also be a file cut short, so that is damage, named
     * with both causes.
     */
    static void checkSegmentLength(Path file, long records, boolean last, long recordsPerSegment, int pageSize) {
        long written = segmentBytes(records, pageSize);
        long configured = segmentBytes(recordsPerSegment, pageSize);
        if (records > recordsPerSegment)
            throw new StorageException("Pagelog segment holds " + records + " records (" + written + " bytes), more than the " + recordsPerSegment
                    + " of archiveSegmentSize " + configured + ": the archive was written with a larger archiveSegmentSize"
                    + (last ? "" : " (" + written + ")") + "; an existing archive keeps its segment size", file);
        if (!last && records < recordsPerSegment)
            throw new CorruptionException("Pagelog segment holds " + records + " records (" + written + " bytes), fewer than the " + recordsPerSegment
                    + " of a full segment of archiveSegmentSize " + configured + ": it was cut short, or the archive was written with archiveSegmentSize "
                    + written, file, written);
    }

    static int headerCrc(ByteBuffer h) {
        return FormatChecks.crc32c(h, 0, HEADER_CRC_OFFSET);
    }

    /** Where a record's CRC resumes after the CRC field: version 2 left the reserved kind field out. */
    static int crcBodyFrom(int version) {
        return version == 2 ? IMAGE_OFFSET : KIND_OFFSET;
    }

    /**
     * The CRC of the record at {@code at} of {@code buf} in a segment of {@code version}: its header fields and its
     * body, computed with {@code crc}.
     */
    static int recordCrc(ByteBuffer buf, int at, int recordBytes, int version, CRC32C crc) {
        crc.reset();
        ByteBuffer b = buf.duplicate();
        b.limit(at + RECORD_CRC_OFFSET).position(at);
        crc.update(b);
        b.limit(at + recordBytes).position(at + crcBodyFrom(version));
        crc.update(b);
        return (int) crc.getValue();
    }

    /** The layout of the entries of a segment of format {@code version}. */
    static EntryLayout entryLayout(int version) {
        return version <= MASK_ENTRY_VERSION ? MASK_ENTRY : RANGE_ENTRY;
    }

    /** Bytes of a version 3 entry whose mask is {@code changed}, with chunks of {@code chunkBytes}. */
    static int entryBytes(long changed, int chunkBytes) {
        return MASK_ENTRY.headerSize() + Long.bitCount(changed) * chunkBytes;
    }

    /** The most bytes a version 4 entry of the chunks of {@code changed}, each {@code chunkBytes}, can take: a range each. */
    static int entryBytesAtMost(long[] changed, int chunkBytes) {
        int chunks = 0;
        for (long m : changed) chunks += Long.bitCount(m);
        return rangeEntryBytes(chunks, chunks * chunkBytes);
    }

    /** Bytes of a version 4 entry of {@code ranges} ranges carrying {@code payload} bytes. */
    static int rangeEntryBytes(int ranges, int payload) {
        return (RANGE_ENTRY.headerSize() + ranges * RANGE_ENTRY_BYTES + payload + Long.BYTES - 1) & -Long.BYTES;
    }

    /** Bytes of the entry whose header is at {@code at} of {@code buf}, in a segment of format {@code version}. */
    static int entryBytes(ByteBuffer buf, int at, int version, int chunkBytes) {
        if (version <= MASK_ENTRY_VERSION) return entryBytes(buf.getLong(at + ENTRY_CHANGED_OFFSET), chunkBytes);
        return rangeEntryBytes(Short.toUnsignedInt(buf.getShort(at + ENTRY_RANGES_OFFSET)), Short.toUnsignedInt(buf.getShort(at + ENTRY_PAYLOAD_OFFSET)));
    }

    /**
     * The CRC of the entry at {@code at} of {@code buf}, {@code bytes} long, laid out as {@code layout}: its fields
     * before the CRC and all after the header.
     */
    static int entryCrc(ByteBuffer buf, int at, int bytes, EntryLayout layout, CRC32C crc) {
        crc.reset();
        ByteBuffer b = buf.duplicate();
        b.limit(at + layout.crc()).position(at);
        crc.update(b);
        b.limit(at + bytes).position(at + layout.headerSize());
        crc.update(b);
        return (int) crc.getValue();
    }

    /** The address of the entry at {@code bodyOffset} of the body of record {@code record}. */
    static long entryAddress(long record, int bodyOffset) {
        return record | ((long) (bodyOffset >>> 3) << RECORD_BITS);
    }

    /** The record an address lies in. */
    static long recordOf(long address) {
        return address & RECORD_MASK;
    }

    /** The body offset of the entry an address names; 0 when it names a whole record. */
    static int entryOffsetOf(long address) {
        return (int) (address >>> RECORD_BITS) << 3;
    }
}
