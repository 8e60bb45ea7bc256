package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;

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
 *  0                8         12         16                24         28         32
 * +----------------+---------+----------+-----------------+----------+----------+
 * | magic (long)   | version | pageSize | segment (long)  | reserved | crc32c   |
 * +----------------+---------+----------+-----------------+----------+----------+
 *   crc32c covers bytes [0, 28).
 *
 * Record (RECORD_HEADER_SIZE = 32 bytes, then the page image; pageSize + 32 bytes in all):
 *  0                8                16               24         28         32
 * +----------------+----------------+----------------+----------+----------+------------ ... -+
 * | pageId (long)  | hi (long)      | lo (long)      | crc32c   | reserved | image (pageSize)   |
 * +----------------+----------------+----------------+----------+----------+------------ ... -+
 *   crc32c covers bytes [0, 24) and the image.
 *   (lo, hi]: no snapshot outside it needs the record — hi is the latest snapshot when it was captured, lo its
 *   page's SavedAfter at the volume's level before.
 * </pre>
 *
 * <p>Format versions:
 * <ul>
 *   <li>1: records of pageId | snapshot | crc32c | reserved | image (24-byte header). No longer read: a segment of
 *       this version is refused by name.</li>
 *   <li>2: records carry (lo, hi] in place of the snapshot, so reclamation can decide by whole segments.</li>
 * </ul>
 */
final class PagelogDescriptor {
    /** "VARVEPL1" as a long (stored little-endian). */
    static final long MAGIC = 0x5641525645504c31L;
    /** Current format version; the only one read. */
    static final int VERSION = 2;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 8;
    static final int PAGE_SIZE_OFFSET = 12;
    static final int SEGMENT_OFFSET = 16;
    static final int HEADER_CRC_OFFSET = 28;
    static final int HEADER_SIZE = 32;

    static final int PAGE_ID_OFFSET = 0;
    static final int HI_OFFSET = 8;
    static final int LO_OFFSET = 16;
    static final int RECORD_CRC_OFFSET = 24;
    static final int IMAGE_OFFSET = 32;
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

    /** The header of segment {@code segment} of a volume of {@code pageSize} pages, ready to write. */
    static ByteBuffer header(int pageSize, int segment) {
        ByteBuffer h = ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(MAGIC_OFFSET, MAGIC).putInt(VERSION_OFFSET, VERSION).putInt(PAGE_SIZE_OFFSET, pageSize).putLong(SEGMENT_OFFSET, segment);
        h.putInt(HEADER_CRC_OFFSET, headerCrc(h));
        return h;
    }

    /** Throws a {@link CorruptionException} naming {@code file} unless {@code h} is the header of that segment. */
    static void checkHeader(ByteBuffer h, Path file, int pageSize, int segment) {
        if (h.getInt(HEADER_CRC_OFFSET) != headerCrc(h) || h.getLong(MAGIC_OFFSET) != MAGIC)
            throw new CorruptionException("Pagelog segment header is corrupt", file, MAGIC_OFFSET);
        FormatChecks.refuseUnknownVersion("Pagelog", h.getInt(VERSION_OFFSET), VERSION, file, VERSION_OFFSET);
        if (h.getInt(PAGE_SIZE_OFFSET) != pageSize)
            throw new CorruptionException("Pagelog written with page size " + h.getInt(PAGE_SIZE_OFFSET), file, PAGE_SIZE_OFFSET);
        if (h.getLong(SEGMENT_OFFSET) != segment)
            throw new CorruptionException("Pagelog segment holds number " + h.getLong(SEGMENT_OFFSET), file, SEGMENT_OFFSET);
    }

    static int headerCrc(ByteBuffer h) {
        return FormatChecks.crc32c(h, 0, HEADER_CRC_OFFSET);
    }

    /** The CRC of the record at {@code at} of {@code buf}: its header fields and its image, computed with {@code crc}. */
    static int recordCrc(ByteBuffer buf, int at, int recordBytes, CRC32C crc) {
        crc.reset();
        ByteBuffer b = buf.duplicate();
        b.limit(at + RECORD_CRC_OFFSET).position(at);
        crc.update(b);
        b.limit(at + recordBytes).position(at + IMAGE_OFFSET);
        crc.update(b);
        return (int) crc.getValue();
    }
}
