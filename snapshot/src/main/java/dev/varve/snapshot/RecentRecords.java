package dev.varve.snapshot;

import dev.varve.core.io.FileIO;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The Pagelog records read lately, kept for the next reads. An as-of read of old diff-based history rebuilds a page
 * from a chain of entries that lie in different records, one read each, and the pages of one past tree share those
 * records: a pack holds the entries of pages captured together (traced: 2 x 20,000 gets of an old snapshot read
 * 210,000-245,000 records, only 5,400-7,000 of them distinct, 22-29 MiB). Records never change once written, so a
 * copy serves until recovery cuts the volume ({@link #clear}); the caller has checked that the record's segment is
 * still held, so a reclaimed record is never served. Off-heap, allocated at the first read (a store that never reads
 * its history pays nothing), clock replacement: an {@link ArchivedPageCache} keyed by record.
 */
final class RecentRecords {
    /** About 16 MiB of 4 KiB records: in the trace above it would have served 75-93% of the reads (4 MiB: 25-37%). */
    static final int RECORDS = 4096;
    private final int recordBytes;
    private final ArchivedPageCache cache;

    RecentRecords(int recordBytes) {
        this.recordBytes = recordBytes;
        this.cache = new ArchivedPageCache(RECORDS, recordBytes);
    }

    /**
     * Reads record {@code record}, which lies at {@code offset} of {@code file}, into {@code rec} from its start
     * (position 0, up to {@code recordBytes}); returns the bytes read, fewer when the file ends first (not kept).
     */
    int read(long record, FileIO file, long offset, ByteBuffer rec) throws IOException {
        rec.clear();
        if (cache.copyOut(record, rec, 0)) {
            rec.position(recordBytes);
            return recordBytes;
        }
        int n = file.read(rec, offset);
        if (n == recordBytes) cache.put(record, rec, 0);
        return n;
    }

    /**
     * Copies bytes [{@code from}, {@code from + length}) of record {@code record} (at {@code offset} of {@code file})
     * to {@code dst} at its position, advancing it — by fewer when the record, the file or {@code dst}'s room ends
     * first: from the kept copy, else read whole into {@code rec} (and kept). A diff entry is a few hundred bytes of
     * its record: a link of a chain copies those, not 4 KiB.
     */
    void readPart(long record, FileIO file, long offset, ByteBuffer rec, int from, int length, ByteBuffer dst) throws IOException {
        int n = Math.min(Math.min(length, recordBytes - from), dst.remaining());
        if (!cache.copyOut(record, from, n, dst, dst.position())) {
            n = Math.max(0, Math.min(n, read(record, file, offset, rec) - from));
            dst.put(dst.position(), rec, from, n);
        }
        dst.position(dst.position() + n);
    }

    /** Forgets every record: the volume was cut, and the addresses after the cut will name new records. */
    void clear() {
        cache.clear();
    }
}
