package dev.varve.snapshot;

import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32C;

/**
 * Retro's Pagelog: the archived pre-state pages, appended in log-structured segment files
 * ({@code pagelog-<segment>.log}). An address is the record's global index (a plain long); segment and slot follow
 * from it. Records are fixed-size, so reclamation can later drop whole segments.
 *
 * The layout — segment header, fixed-size records each with its (lo, hi] and CRC32C — is {@link PagelogDescriptor}'s.
 * A record is needed by no snapshot outside its (lo, hi]; a segment keeps the widest such range of its records,
 * which is all reclamation needs to decide that none of them is reachable any more.
 *
 * <p>The write side — staging, writing, fsync, reclamation — is synchronized: the archiver stages and writes
 * while a checkpoint's flush forces and its end reclaims. Reads (as-of views) take no lock: records below
 * {@link #end()} never change, and views pin what they read.
 */
final class Pagelog implements AutoCloseable {
    private static final int HEADER = PagelogDescriptor.HEADER_SIZE;

    private final FileIOFactory io;
    private final Path dir;
    private final int pageSize;
    private final int recordBytes;
    private final long recordsPerSegment;
    /** Segment number → file; appended by the archiver, read by views. */
    private final Map<Integer, FileIO> segments = new ConcurrentHashMap<>();
    /** Records appended but not written yet, one segment's run at most. */
    private final ByteBuffer stage;
    private final ThreadLocal<ByteBuffer> readBuf;
    private final CRC32C crc = new CRC32C();
    /** Next address to write (readable records end here) and next address to stage. */
    private volatile long end;
    private long staged;
    /** Segments before this one were reclaimed. */
    private volatile int firstSegment;
    /** Per segment, the widest (lo, hi] of its records: {lo, hi}. */
    private final Map<Integer, long[]> ranges = new ConcurrentHashMap<>();
    /** Segments whose range was read from unchecked record headers. */
    private final java.util.Set<Integer> unchecked = ConcurrentHashMap.newKeySet();
    private long reclaimedBytes;
    private int unforcedFrom = Integer.MAX_VALUE;

    Pagelog(FileIOFactory io, Path dir, int pageSize, long segmentBytes) {
        this.io = io;
        this.dir = dir;
        this.pageSize = pageSize;
        this.recordBytes = PagelogDescriptor.recordBytes(pageSize);
        this.recordsPerSegment = Math.max(16, (segmentBytes - HEADER) / recordBytes);
        this.stage = ByteBuffer.allocateDirect(recordBytes * 256).order(ByteOrder.LITTLE_ENDIAN);
        this.readBuf = ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(recordBytes).order(ByteOrder.LITTLE_ENDIAN));
        try {
            for (Path p : io.list(dir, PagelogDescriptor.FILE_PREFIX)) {
                if (DurableFiles.isTemp(p)) continue; // a segment creation cut short by a crash: deleted by recovery
                int n = PagelogDescriptor.segmentOf(p);
                if (!segments.isEmpty() && n != lastSegment() + 1) throw new CorruptionException("Pagelog segment is missing", dir.resolve(PagelogDescriptor.fileName(lastSegment() + 1)), 0);
                if (segments.isEmpty()) firstSegment = n; // the ones before were reclaimed
                FileIO f = io.open(p, false);
                segments.put(n, f);
                checkHeader(f, n);
            }
        } catch (IOException | RuntimeException e) {
            close();
            if (e instanceof RuntimeException r) throw r;
            throw new StorageException("cannot open the Pagelog: " + e.getMessage(), dir, e);
        }
        end = segments.isEmpty() ? 0 : lastSegment() * recordsPerSegment + recordsIn(lastSegment());
        staged = end;
        for (int seg : segments.keySet()) ranges.put(seg, scanRange(seg));
    }

    /**
     * Reads the (lo, hi] of every record header of a segment (at open, or of the last one after a cut). Only the
     * headers, so unchecked: the segment is read whole and checked before reclamation trusts it ({@link #checkedRange}).
     */
    private long[] scanRange(int seg) {
        long[] range = {Long.MAX_VALUE, 0};
        ByteBuffer h = ByteBuffer.allocate(PagelogDescriptor.RANGE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        long n = Math.min(recordsPerSegment, end - (long) seg * recordsPerSegment);
        FileIO f = segments.get(seg);
        try {
            for (long i = 0; i < n; i++) {
                h.clear();
                f.read(h, HEADER + i * recordBytes);
                range[1] = Math.max(range[1], h.getLong(PagelogDescriptor.HI_OFFSET));
                range[0] = Math.min(range[0], h.getLong(PagelogDescriptor.LO_OFFSET));
            }
        } catch (IOException e) {
            throw new StorageException("cannot scan a Pagelog segment: " + e.getMessage(), f.path(), e);
        }
        unchecked.add(seg);
        return range;
    }

    /** The (lo, hi] of a segment's records, each record read whole and its CRC checked: a damaged one is named. */
    private long[] checkedRange(int seg) {
        long[] range = {Long.MAX_VALUE, 0};
        ByteBuffer rec = readBuf.get();
        FileIO f = segments.get(seg);
        for (long i = 0; i < recordsPerSegment; i++) {
            long off = HEADER + i * recordBytes;
            rec.clear();
            try {
                if (f.read(rec, off) < recordBytes) throw new CorruptionException("Pagelog record truncated", f.path(), off);
            } catch (IOException e) {
                throw new StorageException("Pagelog read failed: " + e.getMessage(), f.path(), e);
            }
            if (!intact(rec)) throw new CorruptionException("Pagelog record checksum mismatch", f.path(), off);
            range[1] = Math.max(range[1], rec.getLong(PagelogDescriptor.HI_OFFSET));
            range[0] = Math.min(range[0], rec.getLong(PagelogDescriptor.LO_OFFSET));
        }
        return range;
    }

    /** True when the record in {@code rec} matches its CRC (over its header fields and its image). */
    private boolean intact(ByteBuffer rec) {
        return rec.getInt(PagelogDescriptor.RECORD_CRC_OFFSET) == PagelogDescriptor.recordCrc(rec, 0, recordBytes, new CRC32C());
    }

    private int lastSegment() {
        return firstSegment + segments.size() - 1;
    }

    private long recordsIn(int segment) {
        try {
            return Math.max(0, (segments.get(segment).size() - HEADER) / recordBytes);
        } catch (IOException e) {
            throw new StorageException("cannot size a Pagelog segment", segments.get(segment).path(), e);
        }
    }

    private void checkHeader(FileIO f, int n) throws IOException {
        ByteBuffer h = ByteBuffer.allocate(HEADER).order(ByteOrder.LITTLE_ENDIAN);
        if (f.read(h, 0) < HEADER) throw new CorruptionException("Pagelog segment header truncated", f.path(), 0);
        PagelogDescriptor.checkHeader(h, f.path(), pageSize, n);
    }

    /** The segment file that holds (or would hold) {@code address}. */
    Path pathOf(long address) {
        return dir.resolve(PagelogDescriptor.fileName((int) (address / recordsPerSegment)));
    }

    /** Next address to be written. */
    long end() {
        return end;
    }

    /** Bytes held on disk. */
    long bytes() {
        long records = end - (long) firstSegment * recordsPerSegment;
        return records * recordBytes + (long) segments.size() * HEADER;
    }

    /** True when {@code address} was written and not reclaimed. */
    boolean holds(long address) {
        return address >= (long) firstSegment * recordsPerSegment && address < end;
    }

    /** Bytes given back by {@link #reclaimOldest} since open. */
    long reclaimedBytes() {
        return reclaimedBytes;
    }

    /** A test of a segment's widest (lo, hi]: true when no snapshot that still matters lies in it. */
    interface Unreachable {
        boolean test(long lo, long hi);
    }

    /**
     * Deletes the oldest segments, in temporal order, while they lie wholly below {@code limit} and none of their
     * records is {@code reachable} — whole files, nothing copied — never the segment being written.
     */
    synchronized void reclaimOldest(long limit, Unreachable unreachable) {
        while (firstSegment < lastSegment() && (firstSegment + 1L) * recordsPerSegment <= limit) {
            int seg = firstSegment;
            if (unchecked.remove(seg)) ranges.put(seg, checkedRange(seg)); // a damaged header must not let a needed segment go
            long[] range = ranges.getOrDefault(seg, new long[]{Long.MAX_VALUE, 0});
            if (!unreachable.test(range[0], range[1])) return;
            FileIO f = segments.get(seg);
            try {
                long size = f.size();
                f.close();
                io.delete(f.path());
                reclaimedBytes += size;
            } catch (IOException e) {
                throw new StorageException("cannot delete a reclaimed Pagelog segment: " + e.getMessage(), f.path(), e);
            }
            firstSegment = seg + 1; // readers never ask for reclaimed addresses: every live mapping lies above
            segments.remove(seg);
            ranges.remove(seg);
            unchecked.remove(seg);
        }
    }

    /**
     * Fragmentation: bytes of records that no snapshot can reach any more and no ranked extent uses as a base
     * ({@code base}), lying after a record that is still needed — dead data reclamation by whole segments in temporal
     * order cannot give back while something older lives. The expired records before the first needed one are not
     * counted: they are the oldest segment's prefix, which goes whole once the rest of that segment expires.
     */
    long deadBytes(Unreachable unreachable, java.util.function.LongPredicate base) {
        long dead = 0;
        boolean needed = false;
        ByteBuffer h = ByteBuffer.allocate(PagelogDescriptor.RANGE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (long a = (long) firstSegment * recordsPerSegment; a < end; a++) {
            FileIO f = segments.get((int) (a / recordsPerSegment));
            h.clear();
            try {
                f.read(h, offsetOf(a));
            } catch (IOException e) {
                throw new StorageException("cannot read a Pagelog record header: " + e.getMessage(), f.path(), e);
            }
            if (!unreachable.test(h.getLong(PagelogDescriptor.LO_OFFSET), h.getLong(PagelogDescriptor.HI_OFFSET)) || base.test(a)) needed = true;
            else if (needed) dead += recordBytes;
        }
        return dead;
    }

    /**
     * Stages the image at [0, pageSize) of {@code image} for writing and returns its address; staged records reach
     * the file at {@link #writeStaged} (one write per run of records, not per page).
     */
    synchronized long append(long pageId, long lo, long hi, ByteBuffer image, int imageOffset) {
        long address = staged;
        if (stage.remaining() < recordBytes || (address % recordsPerSegment == 0 && stage.position() > 0)) writeStaged();
        int at = stage.position();
        stage.putLong(at + PagelogDescriptor.PAGE_ID_OFFSET, pageId).putLong(at + PagelogDescriptor.HI_OFFSET, hi)
                .putLong(at + PagelogDescriptor.LO_OFFSET, lo).putLong(at + PagelogDescriptor.RECORD_CRC_OFFSET, 0); // CRC and reserved
        stage.put(at + PagelogDescriptor.IMAGE_OFFSET, image, imageOffset, pageSize);
        stage.position(at + recordBytes);
        stage.putInt(at + PagelogDescriptor.RECORD_CRC_OFFSET, PagelogDescriptor.recordCrc(stage, at, recordBytes, crc));
        long[] range = ranges.computeIfAbsent((int) (address / recordsPerSegment), x -> new long[]{Long.MAX_VALUE, 0});
        range[0] = Math.min(range[0], lo);
        range[1] = Math.max(range[1], hi);
        staged = address + 1;
        return address;
    }

    /** Writes every staged record; they become readable. */
    synchronized void writeStaged() {
        if (stage.position() == 0) return;
        long first = end;
        int seg = (int) (first / recordsPerSegment);
        try {
            if (!segments.containsKey(seg)) newSegment(seg);
            stage.flip();
            segments.get(seg).write(stage, offsetOf(first));
        } catch (IOException e) {
            throw new StorageException("Pagelog append failed: " + e.getMessage(), dir.resolve(PagelogDescriptor.fileName(seg)), e);
        } finally {
            stage.clear();
        }
        unforcedFrom = Math.min(unforcedFrom, seg);
        end = staged;
    }

    private void newSegment(int seg) throws IOException {
        segments.put(seg, DurableFiles.create(io, dir.resolve(PagelogDescriptor.fileName(seg)), PagelogDescriptor.header(pageSize, seg)));
    }

    private long offsetOf(long address) {
        return HEADER + (address % recordsPerSegment) * recordBytes;
    }

    /**
     * Reads the image at {@code address} into {@code dst} at {@code dstOffset}, checking its CRC and that it is the
     * image of {@code pageId}; any mismatch is a {@link CorruptionException} naming the segment and offset.
     */
    void read(long address, long pageId, ByteBuffer dst, int dstOffset) {
        if (address < 0 || address >= end) throw new IllegalArgumentException("Pagelog address " + address + " outside [0, " + end + ")");
        int seg = (int) (address / recordsPerSegment);
        FileIO f = segments.get(seg);
        if (f == null) throw new CorruptionException("Pagelog address " + address + " is mapped by a live snapshot but its segment is gone", pathOf(address), offsetOf(address));
        ByteBuffer rec = readBuf.get();
        rec.clear();
        long off = offsetOf(address);
        try {
            if (f.read(rec, off) < recordBytes) throw new CorruptionException("Pagelog record truncated", f.path(), off);
        } catch (IOException e) {
            throw new StorageException("Pagelog read failed: " + e.getMessage(), f.path(), e);
        }
        if (!intact(rec)) throw new CorruptionException("Pagelog record checksum mismatch (page " + pageId + ")", f.path(), off);
        long found = rec.getLong(PagelogDescriptor.PAGE_ID_OFFSET);
        if (found != pageId) throw new CorruptionException("Pagelog record holds page " + found + ", expected " + pageId, f.path(), off);
        dst.put(dstOffset, rec, PagelogDescriptor.IMAGE_OFFSET, pageSize);
    }

    /** Makes every appended record durable. */
    synchronized void force() {
        writeStaged();
        for (int s = Math.max(firstSegment, Math.min(unforcedFrom, lastSegment() + 1)); s <= lastSegment(); s++) {
            try {
                segments.get(s).force();
            } catch (IOException e) {
                throw new StorageException("Pagelog fsync failed: " + e.getMessage(), segments.get(s).path(), e);
            }
        }
        unforcedFrom = Integer.MAX_VALUE;
    }

    /** Drops records at and after {@code newEnd} (recovery: data no durable mapping references). */
    synchronized void truncate(long newEnd) {
        if (newEnd >= end) return;
        if (newEnd < (long) firstSegment * recordsPerSegment)
            throw new CorruptionException("the recovered checkpoint mark needs Pagelog address " + newEnd + " but its segment is gone", pathOf(newEnd), 0);
        try {
            int keep = newEnd == 0 ? 0 : (int) ((newEnd - 1) / recordsPerSegment) + 1; // segments [0, keep) hold [0, newEnd)
            while (!segments.isEmpty() && lastSegment() >= Math.max(keep, firstSegment + 1)) {
                FileIO f = segments.remove(lastSegment());
                f.close();
                io.delete(f.path());
            }
            if (keep > firstSegment) {
                FileIO last = segments.get(keep - 1);
                last.truncate(HEADER + (newEnd - (keep - 1L) * recordsPerSegment) * recordBytes);
                last.force();
            } else if (!segments.isEmpty()) {
                segments.get(firstSegment).truncate(HEADER);
                segments.get(firstSegment).force();
            }
            staged = newEnd;
        } catch (IOException e) {
            throw new StorageException("cannot truncate the Pagelog: " + e.getMessage(), dir, e);
        }
        end = newEnd;
        ranges.keySet().removeIf(seg -> !segments.containsKey(seg));
        unchecked.removeIf(seg -> !segments.containsKey(seg));
        if (!segments.isEmpty()) ranges.put(lastSegment(), scanRange(lastSegment()));
    }

    @Override
    public void close() {
        Closeables.closeAll(segments.values().toArray(new AutoCloseable[0]));
    }
}
