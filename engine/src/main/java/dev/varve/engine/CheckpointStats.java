package dev.varve.engine;

/**
 * The figures of one checkpoint, in the shape of the IEP-113 breakdown ({@link VarveMetrics#lastCheckpoint()},
 * {@link Varve#checkpoint()}). Times are nanoseconds. A read-only view of what the checkpointer recorded, so the
 * checkpointer's own type stays internal.
 */
public final class CheckpointStats {
    /** Before the first checkpoint. */
    public static final CheckpointStats NONE = new CheckpointStats(dev.varve.checkpoint.CheckpointStats.NONE);

    private final dev.varve.checkpoint.CheckpointStats s;

    private CheckpointStats(dev.varve.checkpoint.CheckpointStats s) {
        this.s = s;
    }

    /** The public view of the checkpointer's figures. */
    static CheckpointStats of(dev.varve.checkpoint.CheckpointStats s) {
        return s == dev.varve.checkpoint.CheckpointStats.NONE ? NONE : new CheckpointStats(s);
    }

    /** Checkpoint id; 0 in {@link #NONE}, before the first checkpoint since the store was opened. */
    public long id() {
        return s.id();
    }

    /**
     * What triggered it: timer, dirty pages, wal volume, memory pressure (a writer waiting for a clean page or for
     * data-region head-room), explicit, shutdown, recovery.
     */
    public String reason() {
        return s.reason();
    }

    /** Pages written. */
    public int pages() {
        return s.pages();
    }

    /** How the pages were made recoverable: "recovery files", "physical wal" or "none". */
    public String recoveryData() {
        return s.recoveryData();
    }

    /** Bytes of recovery files written. */
    public long recoveryDataBytes() {
        return s.recoveryDataBytes();
    }

    /** Time writing and fsyncing recovery files. */
    public long recoveryDataNanos() {
        return s.recoveryDataNanos();
    }

    /** Time writing pages to the page files. */
    public long pageWriteNanos() {
        return s.pageWriteNanos();
    }

    /** Time fsyncing page files. */
    public long fsyncNanos() {
        return s.fsyncNanos();
    }

    /**
     * Time from asking for the checkpoint write lock to releasing it: the wait for the writes in flight to finish, then
     * the hold. Writes that start meanwhile wait all of it (they queue behind the checkpoint), so it is the writers' stall.
     */
    public long lockHoldNanos() {
        return s.lockHoldNanos();
    }

    /** Wall time of the whole checkpoint. */
    public long totalNanos() {
        return s.totalNanos();
    }

    /** Pages writers copied into the checkpoint buffer during it. */
    public long copyOnWritePages() {
        return s.copyOnWritePages();
    }

    /** Time writers were throttled during it. */
    public long throttledNanos() {
        return s.throttledNanos();
    }

    /** WAL bytes written since the previous checkpoint's mark. */
    public long walBytes() {
        return s.walBytes();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CheckpointStats c && s.equals(c.s);
    }

    @Override
    public int hashCode() {
        return s.hashCode();
    }

    @Override
    public String toString() {
        return s.toString();
    }
}
