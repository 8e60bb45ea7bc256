package dev.varve.snapshot;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Map;
import java.util.function.LongPredicate;

/**
 * The read side of a {@link Pagelog}: the pre-state at an address — a whole record's image, or an entry's chain of
 * diffs applied to the whole record it ends at ({@link DiffChain}) — every CRC checked on the way, with the records
 * read lately kept for the next reads ({@link RecentRecords}).
 *
 * <p>Design note. Reads take no lock: records below the volume's {@link Pagelog#end()} never change, and as-of views
 * pin what they read. So a read needs of the volume only its end, its segment files (looked up here, never changed)
 * and their format versions, and is kept apart from the volume's synchronized write side — staging, writing, fsync,
 * reclamation — so that what an as-of read costs and checks reads on its own. A reclaimed address fails in
 * {@link #segmentOf} before any cache is asked (I8).
 */
final class PagelogReader {
    private static final int BODY = PagelogDescriptor.IMAGE_OFFSET;

    private final Pagelog volume;
    /** The volume's segment files by number: looked up here, changed only by the volume. */
    private final Map<Integer, ? extends FileIO> segments;
    private final int pageSize;
    private final int recordBytes;
    private final long recordsPerSegment;
    private final ThreadLocal<ByteBuffer> readBuf;
    /** Records read lately, for the chains of old diff-based history (one read per link otherwise). */
    private final RecentRecords recent;
    private final DiffChain chain;
    /** Whether the segment files may be read through a mapping ({@link FileIO#readMapped}): asked only if so. */
    private final boolean mapped;

    PagelogReader(Pagelog volume, Map<Integer, ? extends FileIO> segments, int pageSize, int recordBytes, long recordsPerSegment,
            DiffChain chain, boolean mapped) {
        this.volume = volume;
        this.segments = segments;
        this.pageSize = pageSize;
        this.recordBytes = recordBytes;
        this.recordsPerSegment = recordsPerSegment;
        this.readBuf = ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(recordBytes).order(ByteOrder.LITTLE_ENDIAN));
        this.recent = new RecentRecords(recordBytes);
        this.chain = chain;
        this.mapped = mapped;
    }

    /** This thread's buffer of one whole record, for a read of one (the volume's checked scan of a segment too). */
    ByteBuffer recordBuffer() {
        return readBuf.get();
    }

    /** Forgets the records read and pages rebuilt: the volume was cut, and the addresses after it will name new ones. */
    void forget() {
        recent.clear();
        chain.forget();
    }

    /**
     * Reads the pre-state at {@code address} into {@code dst} at {@code dstOffset}: a whole record's image, or an
     * entry's chain of diffs applied to the whole record it ends at. Checks every CRC on the way, that each is
     * {@code pageId}'s, and the rebuilt page's own CRC; any mismatch is a {@link CorruptionException} naming the
     * segment and offset.
     */
    void read(long address, long pageId, ByteBuffer dst, int dstOffset) {
        segmentOf(PagelogDescriptor.recordOf(address)); // a reclaimed address fails here, before any cache is asked (I8)
        chain.read(volume, address, pageId, dst, dstOffset);
    }

    /** The whole record an address's chain ends at (in the same segment): where a ranked extent based on it pins the volume. */
    long headOf(long address, long pageId) {
        if (PagelogDescriptor.entryOffsetOf(address) == 0) return PagelogDescriptor.recordOf(address);
        int version = volume.versionOf(PagelogDescriptor.recordOf(address));
        return chain.readEntry(volume, address, pageId, version).getLong(PagelogDescriptor.entryLayout(version).head());
    }

    /** Reads the whole record {@code address} (no entry) into {@code dst}: {@code pageId}'s image, checked. */
    void readWhole(long address, long pageId, ByteBuffer dst, int dstOffset) {
        ByteBuffer rec = readBuf.get();
        long off = readRecord(address, rec);
        FileIO f = segmentOf(address);
        if (volume.versionOf(address) != PagelogDescriptor.MIN_VERSION
                && rec.getInt(PagelogDescriptor.KIND_OFFSET) != PagelogDescriptor.KIND_WHOLE)
            throw new CorruptionException("Pagelog record is a diff pack, not the image of page " + pageId, f.path(), off);
        long found = rec.getLong(PagelogDescriptor.PAGE_ID_OFFSET);
        if (found != pageId) throw new CorruptionException("Pagelog record holds page " + found + ", expected " + pageId, f.path(), off);
        dst.put(dstOffset, rec, BODY, pageSize);
    }

    /** Reads and checks record {@code address} into {@code rec}; returns its offset in its segment. */
    private long readRecord(long address, ByteBuffer rec) {
        FileIO f = segmentOf(address);
        long off = volume.offsetOf(address);
        try {
            if (recent.read(address, f, off, rec) < recordBytes) throw new CorruptionException("Pagelog record truncated", f.path(), off);
        } catch (IOException e) {
            throw new StorageException("Pagelog read failed: " + e.getMessage(), f.path(), e);
        }
        if (!volume.intact(rec, volume.versionOf(address)))
            throw new CorruptionException("Pagelog record checksum mismatch", f.path(), off);
        return off;
    }

    /** The segment holding written record {@code address}; a {@link CorruptionException} when it was reclaimed. */
    private FileIO segmentOf(long address) {
        if (address < 0 || address >= volume.end())
            throw new IllegalArgumentException("Pagelog address " + address + " outside [0, " + volume.end() + ")");
        FileIO f = segments.get((int) (address / recordsPerSegment));
        if (f == null) throw new CorruptionException("Pagelog address " + address + " is mapped by a live snapshot but its segment is gone",
                volume.pathOf(address), volume.offsetOf(address));
        return f;
    }

    /**
     * Reads the bytes of record {@code address}'s body from the entry offset the address names into {@code dst} (one
     * read, up to its remaining room); returns where they lie in the segment file. A {@link CorruptionException} when
     * no entry can lie there.
     */
    long readEntryBytes(long address, ByteBuffer dst) {
        long record = PagelogDescriptor.recordOf(address);
        int offset = PagelogDescriptor.entryOffsetOf(address);
        FileIO f = segmentOf(record);
        long off = volume.offsetOf(record) + BODY + offset;
        if (volume.versionOf(record) == PagelogDescriptor.MIN_VERSION
                || offset + PagelogDescriptor.entryLayout(volume.versionOf(record)).headerSize() > pageSize)
            throw new CorruptionException("Pagelog address " + address + " names a diff entry where none can be", f.path(), off);
        try {
            // a filled segment is read through its mapping where the file has one: a copy of the entry alone, no system
            // call; else the whole record is read and kept, for the other entries of its pack
            if (!mapped || !filled(record) || !readMapped(f, dst, off, Math.min(dst.remaining(), recordBytes - BODY - offset)))
                recent.readPart(record, f, volume.offsetOf(record), readBuf.get(), BODY + offset, recordBytes - BODY - offset, dst);
        } catch (IOException x) {
            throw new StorageException("Pagelog read failed: " + x.getMessage(), f.path(), x);
        }
        return off;
    }

    /** Whether every record of {@code record}'s segment is written: records below the end never change. */
    private boolean filled(long record) {
        return (record / recordsPerSegment + 1) * recordsPerSegment <= volume.end();
    }

    /** Copies {@code n} bytes at {@code off} of filled segment file {@code f} into {@code dst} through its mapping; false where it has none. */
    private boolean readMapped(FileIO f, ByteBuffer dst, long off, int n) throws IOException {
        int limit = dst.limit();
        dst.limit(dst.position() + n);
        try {
            return f.readMapped(dst, off, volume.offsetOf(recordsPerSegment - 1) + recordBytes);
        } finally {
            dst.limit(limit);
        }
    }

    /**
     * The (lo, hi] over the headers of the first {@code records} records of segment {@code seg} (at open, or of the
     * last one after a cut). Only the headers, so unchecked: reclamation trusts a segment's range once
     * {@link #checkedRange} has read it whole.
     */
    long[] headerRange(int seg, long records) {
        long[] range = {Long.MAX_VALUE, 0};
        ByteBuffer h = ByteBuffer.allocate(PagelogDescriptor.RANGE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        FileIO f = segments.get(seg);
        try {
            for (long i = 0; i < records; i++) {
                h.clear();
                f.read(h, PagelogDescriptor.HEADER_SIZE + i * recordBytes);
                range[1] = Math.max(range[1], h.getLong(PagelogDescriptor.HI_OFFSET));
                range[0] = Math.min(range[0], h.getLong(PagelogDescriptor.LO_OFFSET));
            }
        } catch (IOException e) {
            throw new StorageException("cannot scan a Pagelog segment: " + e.getMessage(), f.path(), e);
        }
        return range;
    }

    /** The (lo, hi] of a segment's records, each record read whole and its CRC checked: a damaged one is named. */
    long[] checkedRange(int seg, int version) {
        long[] range = {Long.MAX_VALUE, 0};
        ByteBuffer rec = recordBuffer();
        FileIO f = segments.get(seg);
        for (long i = 0; i < recordsPerSegment; i++) {
            long off = PagelogDescriptor.HEADER_SIZE + i * recordBytes;
            rec.clear();
            try {
                if (f.read(rec, off) < recordBytes) throw new CorruptionException("Pagelog record truncated", f.path(), off);
            } catch (IOException e) {
                throw new StorageException("Pagelog read failed: " + e.getMessage(), f.path(), e);
            }
            if (!volume.intact(rec, version)) throw new CorruptionException("Pagelog record checksum mismatch", f.path(), off);
            range[1] = Math.max(range[1], rec.getLong(PagelogDescriptor.HI_OFFSET));
            range[0] = Math.min(range[0], rec.getLong(PagelogDescriptor.LO_OFFSET));
        }
        return range;
    }

    /**
     * Fragmentation: bytes of records that no snapshot can reach any more and no ranked extent uses as a base
     * ({@code base}), lying after a record that is still needed — dead data reclamation by whole segments in temporal
     * order cannot give back while something older lives. The expired records before the first needed one are not
     * counted: they are the oldest segment's prefix, which goes whole once the rest of that segment expires. A walk
     * of the record headers from {@code firstSegment}, the volume's oldest.
     */
    long deadBytes(int firstSegment, Pagelog.Unreachable unreachable, LongPredicate base) {
        long dead = 0;
        boolean needed = false;
        ByteBuffer h = ByteBuffer.allocate(PagelogDescriptor.RANGE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (long a = (long) firstSegment * recordsPerSegment; a < volume.end(); a++) {
            int seg = (int) (a / recordsPerSegment);
            FileIO f = segments.get(seg);
            // read without the monitor (a metric must not hold up the archiver), so reclamation may close and remove
            // a segment under this walk: its records are gone, not dead; go on after it
            if (f == null) {
                a = (seg + 1L) * recordsPerSegment - 1;
                continue;
            }
            h.clear();
            try {
                f.read(h, volume.offsetOf(a));
            } catch (IOException e) {
                if (volume.reclaimed(seg, f)) {
                    a = (seg + 1L) * recordsPerSegment - 1;
                    continue;
                }
                throw new StorageException("cannot read a Pagelog record header: " + e.getMessage(), f.path(), e);
            }
            if (!unreachable.test(h.getLong(PagelogDescriptor.LO_OFFSET), h.getLong(PagelogDescriptor.HI_OFFSET)) || base.test(a)) needed = true;
            else if (needed) dead += recordBytes;
        }
        return dead;
    }
}
