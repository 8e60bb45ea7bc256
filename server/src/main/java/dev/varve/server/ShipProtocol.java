package dev.varve.server;

import dev.varve.engine.TableOptions;
import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * The snapshot-shipping wire format. A shipping connection opens with the 4-byte {@link #MAGIC} (the server tells it
 * from HTTP by those bytes), then both sides exchange frames:
 *
 * <pre>
 *   0        4      5                  5+n      9+n
 *   +--------+------+------------------+--------+
 *   | length | type | payload (n bytes)| crc32c |     length = 1 + n + 4 (bytes after the length field)
 *   +--------+------+------------------+--------+     crc32c over type and payload (PAGES: over type and
 * </pre>                                                  the 12 bytes before the pages, which carry their own)
 * All integers big-endian. Client to server: {@link #HELLO}. Server to client: {@link #HEADER}, a {@link #TABLE} per
 * table, the image's pages in {@link #PAGES} frames (file by file, as {@link dev.varve.engine.SnapshotImage} hands
 * them out), then {@link #END}; or {@link #ERROR} at any point.
 * In follow mode ({@link #FOLLOW} in HELLO's flags) the connection stays open after END and carries every change
 * committed after the image's snapshot, in commit order: {@link #CHANGES}, {@link #TABLE_CREATED},
 * {@link #PARTITION_DESTROYED}, {@link #SNAPSHOT}, {@link #RANK}, and a {@link #HEARTBEAT} each second without one.
 * Every follow frame (CHANGES, TABLE_CREATED, PARTITION_DESTROYED, SNAPSHOT, RANK, HEARTBEAT) starts with a sequence
 * number u64, 1 for the first after END and one more for each next; the fields below follow it.
 *
 * <ul>
 *   <li>HELLO: version u32, snapshot id u64 (ignored in follow mode: the sender declares the image's snapshot),
 *       flags u32.</li>
 *   <li>HEADER: snapshot id u64, rank u32, declared millis u64, page size u32, partitions u32, recovery mode
 *       (string), image pages u64, data region size u64 (absent from senders of earlier builds of version 3), WAL
 *       segment size u64 (absent from senders of earlier builds of version 4). A receiver reads what it knows and
 *       ignores bytes after it, so a field added at the end needs no new version; one absent is taken as the
 *       default.</li>
 *   <li>TABLE: name (string), placement u8 (0 by key hash, 1 by the caller), partitions u32, entries u64: what the
 *       received store must hold (its catalog comes with the pages).</li>
 *   <li>PAGES: file id u32, first page index u32, count u32, then {@code count} whole pages of consecutive indexes,
 *       each with its own CRC.</li>
 *   <li>END: pages u64, tables u32, image digest u32 (see {@link ImageDigest}).</li>
 *   <li>ERROR: message (string).</li>
 *   <li>CHANGES: lsn u64, count u32, then per change table (string), partition u32, key length u16, key, value
 *       length i32 (-1 for a remove), value: one atomic write.</li>
 *   <li>TABLE_CREATED: lsn u64, name (string), placement u8, partitions u32. PARTITION_DESTROYED: lsn u64, table
 *       (string), partition u32.</li>
 *   <li>SNAPSHOT and RANK: lsn u64, snapshot id u64, rank u32. HEARTBEAT: nothing more.</li>
 * </ul>
 * A string is a u16 byte length and UTF-8 bytes.
 *
 * <p>What a receiver refuses though the frame passed its CRC (a CRC says only that the sender meant it): PAGES out of
 * the order a {@link dev.varve.engine.SnapshotImage} hands them out (file by file, each file once, its data pages 1,
 * 2, ... in runs that continue one another, then its meta page, index 0, alone); a second HEADER, or more than
 * {@link #MAX_TABLES} TABLE frames; a count or length a frame does not hold the bytes for; and in follow mode a
 * SNAPSHOT id not above the last one, a record (CHANGES, TABLE_CREATED, PARTITION_DESTROYED) whose LSN is not above
 * the last declaration's (SNAPSHOT, RANK) and the last record's of each partition it writes, a declaration whose LSN
 * is not above every record's before it, a record of a table the standby lacks, and a follow frame whose sequence
 * number is not the next (one left out, repeated or reordered). At END, the {@link ImageDigest} of what arrived — its
 * tables, and each page's file, index and stored CRC (which the page's bytes were checked against) — must equal the
 * sender's: pages left out, repeated, or changed on the way with a CRC to match are refused there.
 *
 * <p>Versions: 1 — the first; 2 — tables carry their placement and partition count, entries and changes their
 * partition (caller-placed tables ship exactly), image frames of 1 MiB; 3 — the image is the snapshot's pages, not
 * its entries; 4 — follow frames carry a sequence number, and the END digest covers each page's CRC. A receiver and
 * a sender of different versions do not talk: the sender refuses the HELLO with an ERROR naming both versions.
 */
final class ShipProtocol {
    /** "VRVS": first bytes of a shipping connection. */
    static final byte[] MAGIC = "VRVS".getBytes(StandardCharsets.US_ASCII);
    static final int VERSION = 4;

    static final byte HELLO = 1;
    static final byte HEADER = 2;
    static final byte TABLE = 3;
    static final byte PAGES = 4;
    static final byte END = 5;
    static final byte ERROR = 6;
    static final byte CHANGES = 7;
    static final byte TABLE_CREATED = 8;
    static final byte PARTITION_DESTROYED = 9;
    static final byte SNAPSHOT = 10;
    static final byte RANK = 11;
    static final byte HEARTBEAT = 12;

    /** HELLO flag: stream the changes after the image. */
    static final int FOLLOW = 1;

    /** Bytes of the length field. */
    static final int LENGTH_BYTES = 4;
    /** Bytes around a payload after the length field: type and CRC. */
    static final int FRAME_OVERHEAD = 1 + 4;
    /** Bytes of a PAGES frame's payload before its pages, saying where they go: file id, first index, count. */
    static final int PAGES_RUN_BYTES = 12;
    /** Bytes of the sequence number a follow frame's payload starts with. */
    static final int SEQUENCE_BYTES = 8;
    /** A PAGES frame carries at most this many bytes of pages; a CHANGES frame is closed once it passes this size. */
    static final int FRAME_TARGET_BYTES = 1 << 20;
    /**
     * Largest frame a receiver accepts: an image frame is at most a target-size frame, but one
     * CHANGES frame carries a whole atomic write of the sender, which its WAL bounds only by the segment size.
     */
    static final int MAX_FRAME_BYTES = 256 << 20;
    /**
     * Most TABLE frames an image has: a store's tables are numbered 1 to {@code PageId.MAX_TABLE_ID} (0x7FFF; 0 is the
     * catalog's file), so a sender sending more is not sending a store.
     */
    static final int MAX_TABLES = 0x7FFF;
    /** Largest frame the server accepts from a client (HELLO): nothing a client sends needs more. */
    static final int MAX_REQUEST_FRAME_BYTES = 4096;

    private ShipProtocol() {
    }

    /**
     * Bytes of a frame body ({@code type} and payload, {@code bodyLength} bytes) its CRC32C covers: all of them,
     * except in a PAGES frame, where it covers the type and the 12 bytes saying where the pages go, and each page is
     * covered by its own CRC, which the receiver checks page by page as it writes them ({@link
     * dev.varve.engine.ImageLoader#write}). Summing the bulk of the image twice more would only cost CPU.
     */
    static int crcCovers(byte type, int bodyLength) {
        return type == PAGES ? Math.min(bodyLength, 1 + PAGES_RUN_BYTES) : bodyLength;
    }

    /** Most pages a PAGES frame carries, what a receiver accepts: {@link #FRAME_TARGET_BYTES} of them (at least one). */
    static int pagesPerFrame(int pageSize) {
        return Math.max(1, FRAME_TARGET_BYTES / pageSize);
    }

    /**
     * Pages a sender puts in a PAGES frame: as many as leave the whole frame (length, type, where the pages go, pages
     * and CRC) within {@link #FRAME_TARGET_BYTES}, one page fewer than {@link #pagesPerFrame} allows. Netty's adaptive
     * allocator pools buffers of up to 1 MiB and allocates a larger one afresh for each frame, zero-filled: 2.6% of
     * an idle transfer's CPU samples went to that fill alone (`perf`, 2026-12-06).
     */
    static int pagesPerSentFrame(int pageSize) {
        return Math.max(1, (FRAME_TARGET_BYTES - LENGTH_BYTES - FRAME_OVERHEAD - PAGES_RUN_BYTES) / pageSize);
    }

    /** Placement and partition count, as TABLE and TABLE_CREATED carry them. */
    static void writeOptions(ByteBuf b, TableOptions options) {
        b.writeByte(options.callerPlaced() ? 1 : 0).writeInt(options.partitions());
    }

    /** Reads what {@link #writeOptions} wrote; a bad placement or partition count is a damaged stream. */
    static TableOptions readOptions(ByteBuf b) {
        byte placement = b.readByte();
        int partitions = b.readInt();
        if (placement != 0 && placement != 1) throw new BackupException("the sender sent table placement " + placement + " (0 or 1 expected)");
        if (partitions < 1 || partitions > TableOptions.MAX_PARTITIONS)
            throw new BackupException("the sender sent a table of " + partitions + " partitions");
        return placement == 1 ? TableOptions.callerPlaced(partitions) : TableOptions.hashPlaced(partitions);
    }

    static String typeName(byte type) {
        switch (type) {
            case HELLO: return "HELLO";
            case HEADER: return "HEADER";
            case TABLE: return "TABLE";
            case PAGES: return "PAGES";
            case END: return "END";
            case ERROR: return "ERROR";
            case CHANGES: return "CHANGES";
            case TABLE_CREATED: return "TABLE_CREATED";
            case PARTITION_DESTROYED: return "PARTITION_DESTROYED";
            case SNAPSHOT: return "SNAPSHOT";
            case RANK: return "RANK";
            case HEARTBEAT: return "HEARTBEAT";
            default: return "unknown type " + type;
        }
    }
}
