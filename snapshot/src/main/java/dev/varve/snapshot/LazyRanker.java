package dev.varve.snapshot;

import dev.varve.core.io.FileIOFactory;
import dev.varve.core.util.LongLongMap;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Thresher's lazy segregation, with the hybrid page window W: at the first checkpoint mark after a raised snapshot
 * leaves the window, its pages first changed between declaration and join are copied into a {@link RankedExtent} at
 * the new level as byte-range diffs against that level's pre-states, and the move is logged with the mark. Runs on
 * the checkpoint's thread; the copy reads and writes outside the archive's state lock, taking it only to look up and
 * to switch the snapshot's reads. Also keeps what the copies cost: bytes written and the diffs' compactness R.
 */
final class LazyRanker {
    private static final Logger LOG = LoggerFactory.getLogger(LazyRanker.class);
    private final ArchiveLock lock;
    private final FileIOFactory io;
    private final ArchiveLevel[] levels;
    private final SnapshotRegistry registry;
    private final MoveLog moves;
    private final RankedExtents extents;
    private final int pageSize;
    private final AtomicLong storeId;
    private final LongAdder copiedBytes = new LongAdder();
    private final LongAdder copiedDiffBytes = new LongAdder();
    private final LongAdder copiedPages = new LongAdder();

    /** {@code storeId}: the store's durable id (0 until a marker holds it), which new extents record. */
    LazyRanker(ArchiveLock lock, FileIOFactory io, ArchiveLevel[] levels, SnapshotRegistry registry, MoveLog moves, RankedExtents extents, int pageSize,
               AtomicLong storeId) {
        this.lock = lock;
        this.storeId = storeId;
        this.io = io;
        this.levels = levels;
        this.registry = registry;
        this.moves = moves;
        this.extents = extents;
        this.pageSize = pageSize;
    }

    /**
     * Thresher's lazy segregation of a snapshot raised after its declaration and now out of the page window. Pages
     * first changed after the raise (the join) are recorded at the new level already; the ones first changed between
     * the declaration and the join — its SPT at the level it is read through, up to that level's join position — are
     * copied into a ranked extent at the target level, as byte-range diffs against pre-states that level holds (of the
     * latest live snapshot there before it; whole pages where it has none). The move is logged with the mark; reads
     * switch to the extent, then the target level's Maplog from the join, and the lower levels stop keeping the
     * snapshot's pre-states. A snapshot raised right after its declaration copies (next to) nothing.
     */
    void copyToLevel(SnapshotRegistry.Move move, long markLsn) {
        long id = move.id();
        int target = move.target();
        long targetStart = move.positions()[target - 1];
        int from;
        long fromStart;
        long baseStart;
        RankedExtent previous;
        lock.lock();
        try {
            SnapshotRecord r = registry.find(id);
            if (r == null) return; // dropped since the mark
            from = registry.readLevel(id);
            fromStart = registry.readStart(r);
            baseStart = registry.baseStart(id, target);
            previous = extents.of(id);
        } finally {
            lock.unlock();
        }
        LongLongMap source = new LongLongMap(1024);
        LongLongMap bases = new LongLongMap(1024);
        if (baseStart >= 0 && baseStart < targetStart) levels[target - 1].maplog.buildSpt(baseStart, bases, targetStart);
        ByteBuffer image = ByteBuffer.allocateDirect(pageSize);
        ByteBuffer baseImage = ByteBuffer.allocateDirect(pageSize);
        RankedExtent extent = null;
        RankedExtent.Writer w = null;
        try (RankedExtent.Reader earlier = previous == null ? null : previous.reader(io)) {
            if (earlier != null) earlier.index(source); // a copy-out after the window: its earlier copy comes first
            levels[from - 1].maplog.buildSpt(fromStart, source, Math.max(fromStart, move.positions()[from - 1]));
            if (source.size() > 0) {
                RankedExtent.Writer writer = new RankedExtent.Writer(io, levels[target - 1].dir, id, target, levels.length, pageSize,
                        storeId.get());
                w = writer;
                source.forEach((pageId, location) -> {
                    ArchiveLevel.read(levels, location, pageId, image, 0, earlier);
                    long base = bases.get(pageId, SnapshotPageTable.MISSING);
                    if (base >= 0 && ArchiveLevel.holds(levels, base)) {
                        ArchiveLevel.read(levels, base, pageId, baseImage, 0, null);
                        writer.add(pageId, image, baseImage, base, ArchiveEncoding.levelOf(base), ArchiveLevel.headOf(levels, base, pageId));
                    } else {
                        writer.add(pageId, image, null, -1, 0, RankedExtentDescriptor.NO_PIN);
                    }
                });
                extent = writer.finish();
            }
        } catch (RuntimeException e) {
            if (w != null) w.abandon();
            throw e;
        }
        moves.append(markLsn, id, target, targetStart, extent != null);
        lock.lock();
        try {
            registry.moved(id, target, targetStart);
            extents.copied(id, extent, previous);
        } finally {
            lock.unlock();
        }
        if (extent == null) {
            LOG.info("lazy ranking moved snapshot {} from level {} to level {} without copying: no page changed before its raise", id, from, target);
            return;
        }
        copiedBytes.add(extent.bytes());
        copiedDiffBytes.add(w.diffBytes());
        copiedPages.add(w.records());
        LOG.info("lazy ranking copied snapshot {} from level {} to level {}: {} pages ({} whole) in {} bytes, R {}", id, from, target,
                w.records(), w.wholePages(), extent.bytes(), String.format("%.3f", w.diffBytes() / ((double) w.records() * pageSize)));
    }

    /** Bytes lazy ranking wrote into ranked extents since open. */
    long copiedBytes() {
        return copiedBytes.sum();
    }

    /** Diff compactness R of the pages lazy ranking copied since open: diff bytes over full-page bytes; NaN before any. */
    double diffCompactness() {
        long pages = copiedPages.sum();
        return pages == 0 ? Double.NaN : copiedDiffBytes.sum() / ((double) pages * pageSize);
    }
}
