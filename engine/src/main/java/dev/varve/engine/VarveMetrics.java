package dev.varve.engine;

/**
 * Figures of an open store. The counters are cumulative since open: each open starts them again at 0 (to Prometheus, a
 * counter reset), and a closed store's keep their last values. A store opened read-only after a crash counts what its
 * recovery did in memory (the recovery checkpoint's WAL bytes, recovery-file bytes and pages), though no file changed.
 */
public interface VarveMetrics {
    /** WAL bytes appended. */
    long walBytesWritten();

    /** Recovery-file bytes written by the checkpoints completed (one that failed is not counted). */
    long recoveryFileBytesWritten();

    /** Checkpoints completed. */
    long checkpointsCompleted();

    /** Pages written by the checkpoints completed (one that failed is not counted). */
    long checkpointPagesWritten();

    /**
     * Time writers spent throttled (checkpoint buffer fill, data-region head-room, a full snapshot capture buffer),
     * summed over the writers: several waiting at once count several times, so it may grow faster than the clock.
     */
    long throttledNanos();

    /**
     * Bytes held by the snapshot archive: each rank level's Pagelog volume, Maplog with its Skippy levels and ranked
     * extents (the sum of {@link #archiveBytesPerLevel}); not the small snapshot, drop, join and move logs beside them.
     */
    long archiveBytes();

    /**
     * Snapshot-archive bytes given back by reclamation: whole Pagelog segments, Maplog portions and the ranked extents
     * no live snapshot or open view reads any more (nothing copied).
     */
    long archiveBytesReclaimed();

    /** Snapshot-archive bytes per rank level's region (its volume, Maplog and ranked extents), level 1 first. */
    long[] archiveBytesPerLevel();

    /**
     * Fragmentation of the snapshot archive: bytes of archived pre-states that no live snapshot, open view or ranked
     * extent needs but that lie behind one still needed, so whole-segment reclamation in temporal order cannot give
     * them back yet. The expired head of each level's oldest segment is not counted: it goes whole once the rest of
     * that segment expires. Reads every archived record's header: for tests and tools.
     *
     * @throws IllegalStateException once the store is closed (the other figures keep their last values)
     */
    long archiveDeadBytes();

    /**
     * Snapshot-archive bytes written by lazy ranking since open: the byte-range diffs (and the whole pages that had
     * no base) copied into a higher level's ranked extents when a re-ranked snapshot left the page window. Eager
     * ranking and reclamation copy nothing, so this stays 0 without {@code rank()}.
     */
    long archiveBytesCopiedByRanking();

    /**
     * Diff compactness R of the pages lazy ranking copied since open: diff bytes over full-page bytes (1.0 when
     * every page went whole, NaN before the first copy). Thresher reports R well below 0.1 for low update density.
     */
    double diffCompactness();

    /**
     * The IEP-113 breakdown of the last checkpoint since open: {@link CheckpointStats#NONE} (id 0) until this open's
     * first, however many the store ran before. A reopen runs none unless it recovers something, and an idle store
     * runs none: with no page dirty and nothing appended to the WAL since the last checkpoint but that checkpoint's
     * own witness record, a checkpoint asked for (a timer tick, {@code checkpoint()}, the close's) returns the last
     * one again. A declaration or a rank change with no page written still gets a checkpoint that writes no page.
     */
    CheckpointStats lastCheckpoint();

    /** Puts and removes applied (each operation of a batch counts). */
    long writes();

    /** Point reads of the live state served ({@code get}); reads through a snapshot view and scans are not counted. */
    long reads();

    /** Pages read from the page files. */
    long pagesRead();

    /** Clean pages evicted from the data region. */
    long pagesEvicted();

    /** Pages currently dirty or held for the running checkpoint. */
    long dirtyPages();

    /** Pages copied into the checkpoint buffer by writers. */
    long copyOnWritePages();

    /** Checkpoint-buffer pages in use now (copy-on-write images of the running checkpoint). */
    long checkpointBufferUsedPages();

    /** Checkpoint-buffer capacity, pages. */
    long checkpointBufferPages();

    /**
     * Bytes of the data region allocated now. The region is allocated as the store uses it, 32 MiB at a time, up to
     * {@code dataRegionSize}; less than that in a store that has used little of it, or whose region stopped growing
     * when the JVM could not give it more direct memory (a warning names the setting).
     */
    long dataRegionAllocatedBytes();

    /**
     * What stopped the store, or null while it is sound: the first failure (a full disk, an I/O error, a failed
     * checkpoint, a change that failed after its WAL record) since which every write, snapshot and checkpoint is
     * refused until the store is reopened (and, after a failed WAL write or fsync, reads of the live state). After a
     * failed checkpoint reads go on, so a read-mostly application learns of it here (or from {@code varve_failed} on
     * the server's {@code /metrics}) rather than from an exception.
     */
    String failure();
}
