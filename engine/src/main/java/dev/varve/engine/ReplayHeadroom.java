package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.wal.WalRecordVisitor;

import java.nio.ByteBuffer;

/**
 * The largest batch recovery will replay, seen by the open's WAL scan, against the data region the store is opened
 * with. A batch is applied whole, and a page it dirtied cannot be evicted before a checkpoint, which cannot run in the
 * middle of it: a batch a larger {@code dataRegionSize} took, replayed into a smaller one, filled the region and
 * waited two minutes for a clean page, then failed asking whether the checkpointer was stuck. Such a region is refused
 * before anything is written, by the rule the batch's own write was checked by ({@link InputLimits#checkBatch}): its
 * head-room estimate may not exceed half the region. The estimate here is taken from a lower bound of the batch's key
 * and value bytes, so a batch its own region took is never refused by that region.
 */
final class ReplayHeadroom implements WalRecordVisitor {
    /** Bytes a batch record holds besides keys and values: its count, a snapshot rank, and per operation at most a kind, a file id and two lengths. */
    private static final int FIXED_BYTES = LogicalRecords.FIRST_OP + LogicalRecords.SNAPSHOT_RANK_BYTES;
    private static final int OP_BYTES = 1 + 4 + 4 + 4;

    private final int pageSize;
    /** Records from here on are replayed: the recovered checkpoint's mark (records before it a restore puts back). */
    private final long replayFrom;
    private int worstPages = -1;
    private long worstLsn;
    private int worstOperations;

    ReplayHeadroom(int pageSize, long replayFrom) {
        this.pageSize = pageSize;
        this.replayFrom = replayFrom;
    }

    @Override
    public void visit(long lsn, int type, ByteBuffer payload) {
        if (type != RecordTypes.DATA_BATCH || lsn < replayFrom) return;
        int operations = LogicalRecords.operationCount(payload);
        long keysAndValues = Math.max(0, payload.remaining() - FIXED_BYTES - (long) OP_BYTES * operations);
        int pages = PageMemory.headroomFor(pageSize, keysAndValues, operations);
        if (pages > worstPages) {
            worstPages = pages;
            worstLsn = lsn;
            worstOperations = operations;
        }
    }

    /** Refuses {@code memory}, the store's data region, when the largest batch to replay may not fit half of it. */
    void refuseSmaller(PageMemory memory, VarveConfig config) {
        if (worstPages <= memory.maxHeadroom()) return;
        long needed = 2L * worstPages * pageSize;
        long neededMiB = (needed + (1L << 20) - 1) >> 20;
        throw new IllegalArgumentException("dataRegionSize of " + config.dataRegionSize() + " bytes (" + memory.capacityPages()
                + " pages) is too small to recover this store: its WAL holds a batch at LSN " + worstLsn + " of " + worstOperations
                + " operations, which may touch ~" + worstPages + " pages, more than half the region, and recovery must replay it whole;"
                + " it was written with a larger dataRegionSize. Open with dataRegionSize of at least " + neededMiB
                + " MiB (e.g. the size it ran with); once it has recovered, a smaller one works. Nothing was changed");
    }
}
