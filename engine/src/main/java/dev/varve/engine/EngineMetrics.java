package dev.varve.engine;

import dev.varve.core.io.StorageException;

/** Live counters of an {@link Engine}. */
final class EngineMetrics implements VarveMetrics {
    private final Engine e;

    EngineMetrics(Engine e) {
        this.e = e;
    }

    @Override
    public long walBytesWritten() {
        return e.wal.bytesWritten();
    }

    @Override
    public long recoveryFileBytesWritten() {
        return e.checkpointer.recoveryFileBytes();
    }

    @Override
    public long checkpointsCompleted() {
        return e.checkpointer.completed();
    }

    @Override
    public long checkpointPagesWritten() {
        return e.checkpointer.pagesWritten();
    }

    @Override
    public long throttledNanos() {
        return e.checkpointer.throttle().throttledNanos() + e.archive.captureWaitNanos();
    }

    @Override
    public long archiveBytes() {
        return e.archive.bytes();
    }

    @Override
    public long archiveBytesReclaimed() {
        return e.archive.reclaimedBytes();
    }

    @Override
    public long[] archiveBytesPerLevel() {
        return e.archive.bytesPerLevel();
    }

    @Override
    public long archiveDeadBytes() {
        try {
            return e.archive.deadBytesInLiveSegments();
        } catch (StorageException x) {
            throw e.closedOr(x); // read from the archive's files, which a close shuts under it
        }
    }

    @Override
    public long archiveBytesCopiedByRanking() {
        return e.archive.copiedByRankingBytes();
    }

    @Override
    public double diffCompactness() {
        return e.archive.diffCompactness();
    }

    @Override
    public CheckpointStats lastCheckpoint() {
        return CheckpointStats.of(e.checkpointer.last());
    }

    @Override
    public long writes() {
        return e.writes.sum();
    }

    @Override
    public long reads() {
        return e.reads.sum();
    }

    @Override
    public long pagesRead() {
        return e.memory.pagesRead();
    }

    @Override
    public long pagesEvicted() {
        return e.memory.pagesEvicted();
    }

    @Override
    public long dirtyPages() {
        return e.memory.heldPages();
    }

    @Override
    public long copyOnWritePages() {
        return e.memory.copyOnWritePages();
    }

    @Override
    public long checkpointBufferUsedPages() {
        return e.memory.checkpointBufferUsed();
    }

    @Override
    public long checkpointBufferPages() {
        return e.memory.checkpointBufferCapacity();
    }

    @Override
    public long dataRegionAllocatedBytes() {
        return e.memory.allocatedBytes();
    }

    @Override
    public String failure() {
        Throwable f = e.failure();
        return f == null ? null : f.toString();
    }

    @Override
    public String toString() {
        return String.format("writes %d, reads %d, wal %d bytes, checkpoints %d (%d pages, %d recovery-file bytes), throttled %d ms, "
                        + "pages read %d, evicted %d, dirty %d, copy-on-write %d",
                writes(), reads(), walBytesWritten(), checkpointsCompleted(), checkpointPagesWritten(), recoveryFileBytesWritten(),
                throttledNanos() / 1_000_000, pagesRead(), pagesEvicted(), dirtyPages(), copyOnWritePages());
    }
}
