package dev.varve.engine;

/**
 * The JMX view of an open store, registered as {@code dev.varve:type=Store,name="<config name>"} while it is open
 * (a read-only open adds {@code readOnly=<n>}, since several may read one store):
 * every {@link VarveMetrics} figure and the last checkpoint's breakdown. {@link #getArchiveDeadBytes} reads every
 * archived record's header, so it is recomputed at most every 10 s;
 * every other attribute is read live.
 */
public interface VarveStoreMXBean {
    /** The store's name (configured, or its path). */
    String getName();

    /** The store directory. */
    String getPath();

    /** True for a store opened read-only. */
    boolean isReadOnly();

    /** See {@link VarveMetrics#walBytesWritten()}. */
    long getWalBytesWritten();

    /** See {@link VarveMetrics#recoveryFileBytesWritten()}. */
    long getRecoveryFileBytesWritten();

    /** See {@link VarveMetrics#checkpointsCompleted()}. */
    long getCheckpointsCompleted();

    /** See {@link VarveMetrics#checkpointPagesWritten()}. */
    long getCheckpointPagesWritten();

    /** See {@link VarveMetrics#throttledNanos()}. */
    long getThrottledNanos();

    /** See {@link VarveMetrics#archiveBytes()}. */
    long getArchiveBytes();

    /** See {@link VarveMetrics#archiveBytesReclaimed()}. */
    long getArchiveBytesReclaimed();

    /** See {@link VarveMetrics#archiveBytesPerLevel()}. */
    long[] getArchiveBytesPerLevel();

    /** See {@link VarveMetrics#archiveDeadBytes()}; cached (costly). */
    long getArchiveDeadBytes();

    /** See {@link VarveMetrics#archiveBytesCopiedByRanking()}. */
    long getArchiveBytesCopiedByRanking();

    /** See {@link VarveMetrics#diffCompactness()}. */
    double getDiffCompactness();

    /** See {@link VarveMetrics#writes()}. */
    long getWrites();

    /** See {@link VarveMetrics#reads()}. */
    long getReads();

    /** See {@link VarveMetrics#pagesRead()}. */
    long getPagesRead();

    /** See {@link VarveMetrics#pagesEvicted()}. */
    long getPagesEvicted();

    /** See {@link VarveMetrics#dirtyPages()}. */
    long getDirtyPages();

    /** See {@link VarveMetrics#copyOnWritePages()}. */
    long getCopyOnWritePages();

    /** See {@link VarveMetrics#checkpointBufferUsedPages()}. */
    long getCheckpointBufferUsedPages();

    /** See {@link VarveMetrics#checkpointBufferPages()}. */
    long getCheckpointBufferPages();

    /** See {@link VarveMetrics#dataRegionAllocatedBytes()}. */
    long getDataRegionAllocatedBytes();

    /** See {@link VarveMetrics#failure()}: null while the store is sound. */
    String getFailure();

    /** Live snapshots. */
    int getLiveSnapshots();

    /** Last checkpoint: id (0 before the first since the store was opened). */
    long getLastCheckpointId();

    /** Last checkpoint: what triggered it. */
    String getLastCheckpointReason();

    /** Last checkpoint: pages written. */
    int getLastCheckpointPages();

    /** Last checkpoint: "recovery files", "physical wal" or "none". */
    String getLastCheckpointRecoveryData();

    /** Last checkpoint: recovery-file bytes written. */
    long getLastCheckpointRecoveryDataBytes();

    /** Last checkpoint: time writing and fsyncing recovery data. */
    long getLastCheckpointRecoveryDataNanos();

    /** Last checkpoint: time writing pages. */
    long getLastCheckpointPageWriteNanos();

    /** Last checkpoint: time fsyncing page files. */
    long getLastCheckpointFsyncNanos();

    /** Last checkpoint: time from asking for the checkpoint write lock to releasing it (its wait and hold). */
    long getLastCheckpointLockHoldNanos();

    /** Last checkpoint: wall time. */
    long getLastCheckpointTotalNanos();

    /** Last checkpoint: pages writers copied during it. */
    long getLastCheckpointCopyOnWritePages();

    /** Last checkpoint: time writers were throttled during it. */
    long getLastCheckpointThrottledNanos();

    /** Last checkpoint: WAL bytes since the previous mark. */
    long getLastCheckpointWalBytes();
}
