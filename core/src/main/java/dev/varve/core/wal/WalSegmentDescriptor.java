package dev.varve.core.wal;

import dev.varve.config.WalSyncMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.store.StoreTag;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The on-disk layout of a WAL segment file and of the records in it. All fields are little-endian.
 *
 * <p>A segment is a file of exactly {@code segmentSize} bytes named {@code wal-<index, 16 digits>.seg}, so a directory
 * listing is already an index. It starts with a header; records follow back to back, each starting at an 8-byte
 * aligned offset (alignment padding is zero). A record never straddles two segments: when the next record does not
 * fit, the rest of the segment stays zero and writing continues in the next segment.
 *
 * <pre>
 * Segment header (HEADER_SIZE = 40 bytes):
 *  0                8         12         16          20          24                32         36         40
 * +----------------+---------+----------+-----------+-----------+-----------------+----------+----------+
 * | magic (long)   | version | syncMode | segSize   | storeTag  | segmentIndex    | crc32c   | reserved |
 * +----------------+---------+----------+-----------+-----------+-----------------+----------+----------+
 *   crc32c covers bytes [0, 32).
 *   segSize and storeTag: until version 3, one long, the segment size (never more than 1 GiB, so its upper half
 *            was always 0).
 *   syncMode (version 2): the walSyncMode every record of the segment was written under, 1 FSYNC, 2 LOG_ONLY,
 *            3 BACKGROUND; the open judges the segment's tail by it (a writable open under another mode seals the
 *            newest segment and starts a new one). Version 1 wrote 0 here: such a segment is judged by the open's mode.
 *   storeTag (version 3): a 32-bit fingerprint of the id of the store that wrote the segment ({@link #storeTag}), or
 *            0 when that id was not yet durable in a checkpoint marker when the segment was created. A segment whose
 *            tag is neither 0 nor this store's is another store's, and is refused by open and reported by verify
 *            ({@link #foreign}).
 *
 * Record (at an 8-aligned offset; RECORD_HEADER_SIZE = 17 bytes, then the payload):
 *  0         4         8                16     17
 * +---------+---------+----------------+------+------------------ ... -+
 * | length  | crc32c  | lsn (long)     | type | payload                 |
 * +---------+---------+----------------+------+------------------ ... -+
 *   length: the whole record, header included (not the alignment padding); 0 = no more records in this segment.
 *   crc32c: over bytes [8, length), i.e. everything after the crc field.
 *   lsn:    the record's own position (see below); a record whose lsn is not its position is stale or garbage.
 *   type:   1..254, opaque to the WAL; 0 is reserved; 255 is the seal (below).
 *
 * Seal (type SEAL_TYPE, payload: the next segment's index, a long): the last record of every segment but the
 * newest, written once the next segment file exists. A segment that ends in a seal proves its successor was
 * created, so a newest segment that went missing is noticed. Room for it is kept free in every segment.
 * </pre>
 *
 * <p>An LSN is a plain {@code long}: {@code segmentIndex * segmentSize + offsetInSegment}. It is the record's position,
 * so it grows monotonically across segments. The first LSN of an empty WAL is {@code HEADER_SIZE} (segment 0).
 *
 * <p>Format versions:
 * <ul>
 *   <li>1: initial format; since the seal was added, segments written by this version end in one (older ones
 *       read the same: a segment without a seal is simply not proof of a successor).</li>
 *   <li>2: the header records the walSyncMode the segment was written under (bytes [12, 16), zero in version 1), and
 *       its torn tail is judged by that mode instead of the open's. Version 1 segments are still read, judged by the
 *       open's mode; a writable open never appends to one (it seals it and starts a version 2 segment).</li>
 *   <li>3: the header records a fingerprint of the store's id (bytes [20, 24), the upper half of the segment size
 *       before, always 0), so a segment copied in from another store is refused instead of replayed. Versions 1 and 2
 *       name no store and are read as they are (appended to as well: a version 2 segment stays version 2).</li>
 * </ul>
 *
 * <p>Why a 32-bit fingerprint and not the 64-bit id: the bytes under the header CRC that no field used are 4 (the
 * segment size's upper half), and growing the header would move every segment's first record, whose LSN is its
 * position — a change to every LSN, not to one field. Two stores' ids share a fingerprint with probability 2^-32:
 * such a foreign segment passes, as every segment did before. Why there rather than in the 4 reserved bytes at 36:
 * the CRC covers them as it stands, so a build of version 2 still finds the header whole and refuses the segment by
 * its version ("written by a newer release") instead of reporting a CRC mismatch as damage.
 *
 * <p>Why 0 ("not known") and not the id from the start: a new store picks its id at its first open but makes it
 * durable only in its first checkpoint's start marker. A crash before that marker leaves segments and no id, and the
 * next open picks another; segments that recorded the first would then be refused as another store's. So a segment
 * records the id only when it is created after a marker holds it ({@link Wal#storeIdDurable}); one created (or
 * prepared ahead) before records 0, which every store accepts.
 */
public final class WalSegmentDescriptor {
    /** "VARVEWAL" in ASCII, read as a little-endian long. */
    public static final long MAGIC = 0x4C41574556524156L;
    /** Current format version. */
    public static final int FORMAT_VERSION = 3;
    /** The format before segments recorded their sync mode, still read. */
    static final int MODELESS_VERSION = 1;
    /** The format before segments recorded their store, still read. */
    static final int STORELESS_VERSION = 2;

    public static final int MAGIC_OFFSET = 0;
    public static final int VERSION_OFFSET = 8;
    /** The walSyncMode that wrote the segment (version 2; zero in version 1). */
    public static final int SYNC_MODE_OFFSET = 12;
    public static final int SEGMENT_SIZE_OFFSET = 16;
    public static final int SEGMENT_INDEX_OFFSET = 24;
    public static final int HEADER_CRC_OFFSET = 32;
    /** The fingerprint of the writing store's id (version 3; 0 when it was not durable yet): segSize's upper half before. */
    public static final int STORE_TAG_OFFSET = 20;
    /** Bytes of segment header; the first record of a segment starts here. */
    public static final int HEADER_SIZE = 40;

    public static final int LENGTH_OFFSET = 0;
    public static final int CRC_OFFSET = 4;
    public static final int LSN_OFFSET = 8;
    public static final int TYPE_OFFSET = 16;
    public static final int PAYLOAD_OFFSET = 17;
    /** Bytes of record header before the payload. */
    public static final int RECORD_HEADER_SIZE = PAYLOAD_OFFSET;
    /** Records start at offsets that are multiples of this, so the length field can be published atomically. */
    public static final int RECORD_ALIGNMENT = 8;

    /** Record type of the seal that ends every segment but the newest; readers never see it. */
    public static final int SEAL_TYPE = 255;
    /** Bytes a seal takes, aligned: kept free at the end of every segment. */
    static final int SEAL_BYTES = (RECORD_HEADER_SIZE + Long.BYTES + RECORD_ALIGNMENT - 1) & -RECORD_ALIGNMENT;

    /** Smallest segment the WAL accepts (the config may demand more). */
    public static final long MIN_SEGMENT_SIZE = 64 * 1024;
    /** Largest segment: a segment is mapped whole into one buffer. */
    public static final long MAX_SEGMENT_SIZE = 1L << 30;

    static final String FILE_PREFIX = "wal-";
    static final String FILE_SUFFIX = ".seg";
    static final String TEMP_SUFFIX = ".tmp";

    /**
     * Length field access with release ordering: the writer publishes a record by its length, stored after its body,
     * so a process killed mid-append leaves a zero length, never a length without its body (the open scan's rule).
     */
    static final VarHandle INT = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    private WalSegmentDescriptor() {
    }

    // ---- LSN helpers ----

    /** The LSN of {@code offset} in segment {@code segmentIndex}. */
    public static long lsn(long segmentIndex, int offset, long segmentSize) {
        return segmentIndex * segmentSize + offset;
    }

    /** The segment an LSN lies in. */
    public static long segmentIndex(long lsn, long segmentSize) {
        return lsn / segmentSize;
    }

    /** The byte offset of an LSN inside its segment. */
    public static int offset(long lsn, long segmentSize) {
        return (int) (lsn % segmentSize);
    }

    /** The first record LSN of a segment (the first LSN ever is {@code firstLsn(0, size)}). */
    public static long firstLsn(long segmentIndex, long segmentSize) {
        return lsn(segmentIndex, HEADER_SIZE, segmentSize);
    }

    /**
     * The LSN after a record ending (aligned) at {@code offset}: a full segment continues at the next segment's first
     * record, so an end position is always a valid place to read or write from.
     */
    static long endLsn(long segmentIndex, int offset, long segmentSize) {
        return offset >= segmentSize ? firstLsn(segmentIndex + 1, segmentSize) : lsn(segmentIndex, offset, segmentSize);
    }

    /** {@code length} rounded up to the record alignment. */
    static int aligned(int length) {
        return (length + RECORD_ALIGNMENT - 1) & -RECORD_ALIGNMENT;
    }

    /** Largest payload a record can carry in a segment of this size. */
    public static int maxPayloadBytes(long segmentSize) {
        return (int) (segmentSize - HEADER_SIZE - RECORD_HEADER_SIZE - SEAL_BYTES);
    }

    // ---- file names ----

    /** {@code wal-0000000000000007.seg} for index 7. */
    public static String fileName(long segmentIndex) {
        return String.format("%s%016d%s", FILE_PREFIX, segmentIndex, FILE_SUFFIX);
    }

    /** The index in a segment file name, or -1 when the name is not a segment's. */
    static long parseIndex(Path file) {
        String name = file.getFileName().toString();
        if (!name.startsWith(FILE_PREFIX) || !name.endsWith(FILE_SUFFIX)
                || name.length() != FILE_PREFIX.length() + 16 + FILE_SUFFIX.length()) {
            return -1;
        }
        String digits = name.substring(FILE_PREFIX.length(), FILE_PREFIX.length() + 16);
        for (int i = 0; i < digits.length(); i++) {
            if (!Character.isDigit(digits.charAt(i))) return -1;
        }
        return Long.parseLong(digits);
    }

    // ---- header ----

    /**
     * Writes a segment header at position 0 of {@code seg}, for records written under {@code mode} by the store whose
     * durable id is {@code storeId} (0: not durable yet, the segment names no store).
     */
    static void writeHeader(ByteBuffer seg, long segmentSize, long segmentIndex, WalSyncMode mode, long storeId) {
        seg.putLong(MAGIC_OFFSET, MAGIC);
        seg.putInt(VERSION_OFFSET, FORMAT_VERSION);
        seg.putInt(SYNC_MODE_OFFSET, modeCode(mode));
        seg.putInt(SEGMENT_SIZE_OFFSET, (int) segmentSize); // at most MAX_SEGMENT_SIZE
        seg.putInt(STORE_TAG_OFFSET, storeId == 0 ? 0 : StoreTag.of(storeId));
        seg.putLong(SEGMENT_INDEX_OFFSET, segmentIndex);
        seg.putInt(HEADER_CRC_OFFSET, headerCrc(seg));
        seg.putInt(HEADER_CRC_OFFSET + 4, 0);
    }

    /** The fingerprint a segment records of store id {@code storeId} (not 0): {@link StoreTag#of}. */
    public static int storeTag(long storeId) {
        return StoreTag.of(storeId);
    }

    private static final String FOREIGN = "WAL segment belongs to another store (";

    /**
     * Why the segment whose (checked) header is in {@code seg} is another store's than the one whose durable id is
     * {@code storeId}, or null when it is not known to be: the store has no durable id yet (0), or the segment names
     * none (version 1 or 2, or created before its store's id was durable).
     */
    static String foreign(ByteBuffer seg, long storeId) {
        if (seg.getInt(VERSION_OFFSET) <= STORELESS_VERSION) return null;
        String why = StoreTag.foreign("WAL segment", seg.getInt(STORE_TAG_OFFSET), storeId);
        return why == null ? null : why + ", and its records would be replayed as this store's; restore the store as a whole from one backup";
    }

    /**
     * Refuses a segment {@code file} whose header (in {@code seg}) is whole and names another store than
     * {@code storeId}'s ({@link #foreign}); nothing else is checked here.
     */
    static void refuseForeign(ByteBuffer seg, Path file, long storeId) {
        if (seg.getLong(MAGIC_OFFSET) != MAGIC || seg.getInt(HEADER_CRC_OFFSET) != headerCrc(seg)) return;
        String why = foreign(seg, storeId);
        if (why != null) throw new CorruptionException(why, file, STORE_TAG_OFFSET);
    }

    /**
     * True for {@link #refuseForeign}'s refusal: another store's file, which is neither damage nor a loss, so whoever
     * explains a WAL failure passes it on as it is.
     */
    public static boolean isForeignRefusal(CorruptionException e) {
        return e.offset() == STORE_TAG_OFFSET && e.what() != null && e.what().startsWith(FOREIGN);
    }

    /**
     * Refuses a segment {@code file} whose header is whole (its magic and CRC check out) but of a format version this
     * build does not read: written by a newer release, not damage — open must not offer to cut the WAL there.
     */
    static void refuseOtherVersion(ByteBuffer seg, Path file) {
        if (seg.getLong(MAGIC_OFFSET) != MAGIC || seg.getInt(HEADER_CRC_OFFSET) != headerCrc(seg)) return;
        int version = seg.getInt(VERSION_OFFSET);
        if (version < MODELESS_VERSION || version > FORMAT_VERSION)
            throw new CorruptionException(NEWER_VERSION + version + " (this build reads versions "
                    + MODELESS_VERSION + " to " + FORMAT_VERSION + "): written by a newer release; open the store with that release", file, VERSION_OFFSET);
    }

    private static final String NEWER_VERSION = "unsupported WAL format version ";

    /**
     * True for {@link #refuseOtherVersion}'s refusal: a segment a newer release wrote, which is neither damage nor a
     * loss, so whoever explains a WAL failure passes it on as it is.
     */
    public static boolean isNewerVersionRefusal(CorruptionException e) {
        return e.offset() == VERSION_OFFSET && e.what() != null && e.what().startsWith(NEWER_VERSION);
    }

    /**
     * Why the header of segment {@code segmentIndex} in the file {@code f} (at {@code file}) does not check out, or null
     * when it does or the file is shorter than a header (its size says what is wrong then).
     *
     * @throws CorruptionException if a newer release wrote it ({@link #refuseOtherVersion})
     */
    static String headerProblem(FileIO f, Path file, long segmentIndex) throws IOException {
        ByteBuffer h = ByteBuffer.allocate(HEADER_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        if (f.read(h, 0) < HEADER_SIZE) return null;
        refuseOtherVersion(h, file);
        return checkHeader(h, segmentIndex);
    }

    /** Why the header in {@code seg} is not that of segment {@code segmentIndex}, or null when it is. */
    static String checkHeader(ByteBuffer seg, long segmentIndex) {
        if (seg.getLong(MAGIC_OFFSET) != MAGIC) return "bad magic, not a WAL segment";
        if (seg.getInt(HEADER_CRC_OFFSET) != headerCrc(seg)) return "segment header CRC mismatch";
        int version = seg.getInt(VERSION_OFFSET);
        if (version < MODELESS_VERSION || version > FORMAT_VERSION) return "unsupported WAL format version " + version;
        if (version != MODELESS_VERSION && modeOf(seg.getInt(SYNC_MODE_OFFSET)) == null) {
            return "unknown walSyncMode code " + seg.getInt(SYNC_MODE_OFFSET) + " in the segment header";
        }
        if (seg.getLong(SEGMENT_INDEX_OFFSET) != segmentIndex) {
            return "header names segment " + seg.getLong(SEGMENT_INDEX_OFFSET) + ", file name says " + segmentIndex;
        }
        return null;
    }

    /**
     * The walSyncMode a (checked) header says the segment was written under, or null for a version 1 segment, which
     * does not say: its tail is judged by the mode of the open that reads it.
     */
    static WalSyncMode writtenUnder(ByteBuffer seg) {
        return seg.getInt(VERSION_OFFSET) == MODELESS_VERSION ? null : modeOf(seg.getInt(SYNC_MODE_OFFSET));
    }

    /** The mode whose rule judges the tail of a (checked) segment: the one it was written under, else {@code open}'s. */
    static WalSyncMode judgedUnder(ByteBuffer seg, WalSyncMode open) {
        WalSyncMode written = writtenUnder(seg);
        return written != null ? written : open;
    }

    // explicit codes, not ordinals: the enum's order is no part of the format
    private static int modeCode(WalSyncMode mode) {
        return switch (mode) {
            case FSYNC -> 1;
            case LOG_ONLY -> 2;
            case BACKGROUND -> 3;
        };
    }

    private static WalSyncMode modeOf(int code) {
        return switch (code) {
            case 1 -> WalSyncMode.FSYNC;
            case 2 -> WalSyncMode.LOG_ONLY;
            case 3 -> WalSyncMode.BACKGROUND;
            default -> null;
        };
    }

    /** The segment size a (checked) header records: 4 bytes from version 3 on, the store tag after them. */
    static long headerSegmentSize(ByteBuffer seg) {
        return seg.getInt(VERSION_OFFSET) <= STORELESS_VERSION ? seg.getLong(SEGMENT_SIZE_OFFSET) : seg.getInt(SEGMENT_SIZE_OFFSET);
    }

    private static int headerCrc(ByteBuffer seg) {
        CRC32C crc = new CRC32C();
        crc.update(seg.duplicate().clear().limit(HEADER_CRC_OFFSET));
        return (int) crc.getValue();
    }

    // ---- records ----

    /** Publishes a record whose body is already written. */
    static void putLengthRelease(ByteBuffer seg, int offset, int length) {
        INT.setRelease(seg, offset + LENGTH_OFFSET, length);
    }

    /** A read-only little-endian view of a segment's bytes, for a scan or a reader to move over (see {@link #recordCrc}). */
    static ByteBuffer readView(ByteBuffer seg) {
        return seg.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * CRC32C of the record body: bytes [offset + 8, offset + length). Moves {@code seg}'s position (its limit is left
     * at its capacity), so {@code seg} is a view the caller owns: a scan's or a reader's view of its segment, a
     * writer's duplicate. A duplicate made here for every record was about a quarter of a recovery scan's samples.
     */
    static int recordCrc(ByteBuffer seg, int offset, int length, CRC32C crc) {
        crc.reset();
        crc.update(seg.limit(seg.capacity()).position(offset + LSN_OFFSET).limit(offset + length));
        seg.limit(seg.capacity()); // absolute reads check the limit
        return (int) crc.getValue();
    }

    /**
     * Why the record at {@code offset} of segment {@code segmentIndex}, held at index {@code at} of {@code seg} (a
     * {@link WalSegmentWindow}'s buffer holds a stretch of a segment), is not valid, or null when it is. A zero length
     * is not checked here (it means "no more records in this segment"). Moves {@code seg}'s position
     * ({@link #recordCrc}).
     */
    static String checkRecord(ByteBuffer seg, int at, long segmentIndex, int offset, long segmentSize, CRC32C crc) {
        int length = seg.getInt(at + LENGTH_OFFSET);
        String bad = badLength(length, offset, segmentSize);
        if (bad != null) return bad;
        if (seg.getInt(at + CRC_OFFSET) != recordCrc(seg, at, length, crc)) return "record CRC mismatch";
        long lsn = seg.getLong(at + LSN_OFFSET);
        if (lsn != lsn(segmentIndex, offset, segmentSize)) return "record LSN " + lsn + " is not its position";
        if (seg.get(at + TYPE_OFFSET) == 0) return "record type 0 is reserved";
        return null;
    }

    /** Why {@code length} cannot be the length of a record at segment offset {@code offset}, or null when it can. */
    static String badLength(int length, int offset, long segmentSize) {
        return length < RECORD_HEADER_SIZE || length > segmentSize - offset ? "bad record length " + length : null;
    }

    /**
     * Writes a record's body and CRC at {@code off} of {@code seg}, everything but its length (which publishes it),
     * and zeroes its alignment padding. Absolute puts only: concurrent writers share the buffer, each in its own range.
     */
    static void putBody(ByteBuffer seg, int off, long lsn, int type, ByteBuffer payload, int payloadBytes) {
        int length = RECORD_HEADER_SIZE + payloadBytes;
        seg.putLong(off + LSN_OFFSET, lsn);
        seg.put(off + TYPE_OFFSET, (byte) type);
        seg.put(off + PAYLOAD_OFFSET, payload, payload.position(), payloadBytes);
        seg.putInt(off + CRC_OFFSET, recordCrc(seg.duplicate(), off, length, new CRC32C()));
        // padding is zero on disk; a staged buffer may hold an earlier segment's bytes there
        for (int p = off + length, end = off + aligned(length); p < end; p++) seg.put(p, (byte) 0);
    }

    /** The payload of a seal naming segment {@code next}. */
    static ByteBuffer sealPayload(long next) {
        return ByteBuffer.allocate(Long.BYTES).order(ByteOrder.LITTLE_ENDIAN).putLong(0, next);
    }

    /** What {@link #isZero} compares a segment's bytes with, a chunk at a time. */
    private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(64 * 1024).asReadOnlyBuffer();

    /**
     * True when bytes [from, to) of {@code seg} are all zero. Open checks the whole unwritten rest of the last segment
     * (64 MiB by default) this way: {@link ByteBuffer#mismatch} compares many bytes a step even before the JIT has
     * compiled the caller (a byte- or long-at-a-time loop took a short-lived tool JVM 70-100 ms per segment).
     */
    static boolean isZero(ByteBuffer seg, int from, int to) {
        for (int i = from; i < to; ) {
            int n = Math.min(to - i, ZEROS.capacity());
            if (seg.slice(i, n).mismatch(ZEROS.slice(0, n)) >= 0) return false;
            i += n;
        }
        return true;
    }

    /** Checks a segment size: a multiple of 4096 in [64 KiB, 1 GiB]. */
    static void checkSegmentSize(long segmentSize) {
        if (segmentSize < WalSegmentDescriptor.MIN_SEGMENT_SIZE || segmentSize > WalSegmentDescriptor.MAX_SEGMENT_SIZE
                || segmentSize % 4096 != 0) {
            throw new IllegalArgumentException("WAL segment size must be a multiple of 4096 in ["
                    + WalSegmentDescriptor.MIN_SEGMENT_SIZE + ", " + WalSegmentDescriptor.MAX_SEGMENT_SIZE
                    + "], was " + segmentSize);
        }
    }
}
