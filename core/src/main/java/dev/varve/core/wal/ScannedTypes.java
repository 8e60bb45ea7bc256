package dev.varve.core.wal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * What a scan of the WAL's records learned per record type: whether it met one, and the first payload long of the last
 * one it met. The WAL treats a type as an opaque byte; the open learns from this which types the log holds (a type
 * this build does not know is refused) and the latest checkpoint it records, without reading the log again.
 */
final class ScannedTypes {
    private final long[] lastHead = new long[256];
    private final boolean[] seen = new boolean[256];
    /** Shown every record, or null. */
    private final WalRecordVisitor visitor;
    /** The segment view the scan passed last, and the visitor's view of it, positioned on each record in turn. */
    private ByteBuffer scanned;
    private ByteBuffer payloads;

    ScannedTypes() {
        this(null);
    }

    ScannedTypes(WalRecordVisitor visitor) {
        this.visitor = visitor;
        Arrays.fill(lastHead, -1);
    }

    /** The valid record at {@code off} of {@code b}, of {@code type}, was scanned. */
    void saw(ByteBuffer b, int off, int type) {
        seen[type] = true;
        if (b.getInt(off) >= WalSegmentDescriptor.RECORD_HEADER_SIZE + Long.BYTES) {
            lastHead[type] = b.getLong(off + WalSegmentDescriptor.PAYLOAD_OFFSET);
        }
        if (visitor != null) {
            // one view per segment, not a slice per record: the slices were most of a 1 GiB WAL scan's allocation
            if (b != scanned) {
                scanned = b;
                payloads = b.asReadOnlyBuffer();
            }
            payloads.limit(off + b.getInt(off)).position(off + WalSegmentDescriptor.PAYLOAD_OFFSET);
            payloads.order(ByteOrder.LITTLE_ENDIAN); // whatever the last visitor left
            visitor.visit(b.getLong(off + WalSegmentDescriptor.LSN_OFFSET), type, payloads);
        }
    }

    /**
     * The scan is over: lets go of the last segment view, whose buffer (a read window grown for a long record, up to a
     * segment's size of direct memory) would otherwise live as long as the scan's result. Returns this.
     */
    ScannedTypes scanned() {
        scanned = null;
        payloads = null;
        return this;
    }

    /** The first payload long of the last record of {@code type} scanned, or -1 when none was. */
    long lastHead(int type) {
        return lastHead[type];
    }

    /** Whether a record of {@code type} was scanned. */
    boolean seen(int type) {
        return seen[type];
    }
}
