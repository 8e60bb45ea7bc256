package dev.varve.core.wal;

import static dev.varve.core.wal.WalSegmentDescriptor.HEADER_SIZE;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds where a WAL ends when it is opened: validates every record of every segment (length, CRC, LSN equal to its
 * position) and cuts a torn or corrupt tail so that appending can continue right after the last good record.
 *
 * <p>Repair order matters for a crash during the repair itself: later segments are deleted first (newest first, so
 * the remaining files stay contiguous), then the bad bytes of the cut segment are zeroed. An interrupted repair is
 * found again on the next open; no stale record can ever follow new ones.
 */
final class WalOpenScan {
    private static final Logger LOG = LoggerFactory.getLogger(WalOpenScan.class);

    /** The segment appending continues in (mapped, open). */
    final WalSegment last;
    /** Offset in {@link #last} after its last good record. */
    final int endOffset;
    /** Index of the oldest segment kept. */
    final long firstIndex;
    /** What was cut, or null when the WAL was clean. */
    final WalTailCut tailCut;

    private WalOpenScan(WalSegment last, int endOffset, long firstIndex, WalTailCut tailCut) {
        this.last = last;
        this.endOffset = endOffset;
        this.firstIndex = firstIndex;
        this.tailCut = tailCut;
    }

    /** Where the records of one segment stop, and why if not at a clean end. */
    private record Stop(int offset, String reason) {
    }

    static WalOpenScan run(FileIOFactory io, Path dir, long segmentSize) {
        List<Long> indexes = listSegments(io, dir);
        if (indexes.isEmpty()) {
            return new WalOpenScan(WalSegment.create(io, dir, 0, segmentSize), HEADER_SIZE, 0, null);
        }
        int start = dropBeforeLastGap(io, dir, indexes);
        CRC32C crc = new CRC32C();
        WalSegment prev = null;
        int prevEnd = 0;
        try {
            for (int i = start; i < indexes.size(); i++) {
                long index = indexes.get(i);
                Path path = dir.resolve(WalSegmentDescriptor.fileName(index));
                WalSegment seg = WalSegment.open(io, path, index, segmentSize);
                String bad = seg == null ? "file size is not " + segmentSize + " bytes" : checkHeader(seg, segmentSize);
                if (bad != null) {
                    WalSegment.closeQuietly(seg);
                    if (prev == null) {
                        throw new CorruptionException("oldest WAL segment is unreadable: " + bad, path, 0);
                    }
                    // prev's tail was already verified to be zero: the cut is at its end, nothing to zero
                    int deleted = deleteFrom(io, dir, indexes, i);
                    return cut(prev, prevEnd, indexes.get(start), segmentSize,
                            "segment " + path.getFileName() + ": " + bad, deleted);
                }
                WalSegment.closeQuietly(prev);
                prev = seg;
                Stop stop = scanRecords(seg, segmentSize, crc);
                if (stop.reason != null) {
                    int deleted = deleteFrom(io, dir, indexes, i + 1);
                    seg.zero(stop.offset, (int) segmentSize);
                    return cut(seg, stop.offset, indexes.get(start), segmentSize, stop.reason, deleted);
                }
                prevEnd = stop.offset;
            }
        } catch (RuntimeException e) {
            WalSegment.closeQuietly(prev);
            throw e;
        }
        return new WalOpenScan(prev, prevEnd, indexes.get(start), null);
    }

    private static WalOpenScan cut(WalSegment seg, int offset, long firstIndex, long segmentSize, String reason,
                                   int deleted) {
        WalTailCut cut = new WalTailCut(seg.path, offset, WalSegmentDescriptor.endLsn(seg.index, offset, segmentSize),
                reason, deleted);
        LOG.warn("{}", cut);
        return new WalOpenScan(seg, offset, firstIndex, cut);
    }

    private static String checkHeader(WalSegment seg, long segmentSize) {
        String bad = WalSegmentDescriptor.checkHeader(seg.buffer, seg.index);
        if (bad == null && WalSegmentDescriptor.headerSegmentSize(seg.buffer) != segmentSize) {
            bad = "header segment size " + WalSegmentDescriptor.headerSegmentSize(seg.buffer) + " differs from the file's";
        }
        return bad;
    }

    private static Stop scanRecords(WalSegment seg, long segmentSize, CRC32C crc) {
        ByteBuffer b = seg.buffer;
        int size = (int) segmentSize;
        int off = HEADER_SIZE;
        while (off < size) {
            if (b.getInt(off) == 0) {
                // a clean end (or a segment switch) leaves only zeros behind; anything else is a lost record
                return WalSegmentDescriptor.isZero(b, off, size) ? new Stop(off, null)
                        : new Stop(off, "zero record length followed by non-zero bytes");
            }
            String bad = WalSegmentDescriptor.checkRecord(b, seg.index, off, segmentSize, crc);
            if (bad != null) return new Stop(off, bad);
            off += WalSegmentDescriptor.aligned(b.getInt(off));
        }
        return new Stop(off, null);
    }

    /** Segment indexes in the directory, ascending; leftovers of crashed segment creations are deleted. */
    private static List<Long> listSegments(FileIOFactory io, Path dir) {
        List<Long> indexes = new ArrayList<>();
        try {
            io.createDirectories(dir);
            for (Path file : io.list(dir, WalSegmentDescriptor.FILE_PREFIX)) {
                if (file.getFileName().toString().endsWith(WalSegmentDescriptor.TEMP_SUFFIX)) {
                    io.delete(file);
                    continue;
                }
                long index = WalSegmentDescriptor.parseIndex(file);
                if (index >= 0) indexes.add(index);
            }
        } catch (IOException e) {
            throw new StorageException("cannot list WAL directory", dir, e);
        }
        Collections.sort(indexes);
        return indexes;
    }

    /**
     * Segments before a gap in the numbering are leftovers of an interrupted {@code deleteSegmentsBefore} (deletes
     * may reach the disk out of order): finish deleting them. Returns the position of the first kept index.
     */
    private static int dropBeforeLastGap(FileIOFactory io, Path dir, List<Long> indexes) {
        int start = 0;
        for (int i = 1; i < indexes.size(); i++) {
            if (indexes.get(i) != indexes.get(i - 1) + 1) start = i;
        }
        for (int i = 0; i < start; i++) {
            Path path = dir.resolve(WalSegmentDescriptor.fileName(indexes.get(i)));
            LOG.warn("Deleting WAL segment {} left before a gap in segment numbering (an interrupted cleanup)", path);
            delete(io, path);
        }
        return start;
    }

    /** Deletes segments {@code indexes[from..]}, newest first; returns how many. */
    private static int deleteFrom(FileIOFactory io, Path dir, List<Long> indexes, int from) {
        for (int i = indexes.size() - 1; i >= from; i--) {
            delete(io, dir.resolve(WalSegmentDescriptor.fileName(indexes.get(i))));
        }
        return Math.max(0, indexes.size() - from);
    }

    private static void delete(FileIOFactory io, Path path) {
        try {
            io.delete(path);
        } catch (IOException e) {
            throw new StorageException("cannot delete WAL segment", path, e);
        }
    }
}
