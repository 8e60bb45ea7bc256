package dev.varve.engine;

import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.wal.WalRecordVisitor;

import java.nio.ByteBuffer;

/**
 * The largest change recovery will replay, seen by the open's WAL scan, against the data region the store is opened
 * with. A batch (or a table's creation) is applied whole, and a page it dirtied cannot be evicted before a checkpoint,
 * which cannot run in the middle of it: one a larger {@code dataRegionSize} took, replayed into a smaller one, filled
 * the region and waited two minutes for a clean page, then failed asking whether the checkpointer was stuck. Such a
 * region is refused before anything is written, by the rule the change's own write was checked by
 * ({@link InputLimits#checkBatch}, {@link TableRegistry}'s room check): its head-room estimate may not exceed half the
 * region. A batch's estimate here is taken from a lower bound of its key and value bytes, so a change its own region
 * took is never refused by that region.
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
    /** What the worst change is, for the message. */
    private String worstChange;

    ReplayHeadroom(int pageSize, long replayFrom) {
        this.pageSize = pageSize;
        this.replayFrom = replayFrom;
    }

    @Override
    public void visit(long lsn, int type, ByteBuffer payload) {
        if (lsn < replayFrom) return;
        if (type == RecordTypes.DATA_BATCH) {
            int operations = LogicalRecords.operationCount(payload);
            long keysAndValues = Math.max(0, payload.remaining() - FIXED_BYTES - (long) OP_BYTES * operations);
            int pages = PageMemory.headroomFor(pageSize, keysAndValues, operations);
            if (pages > worstPages) note(lsn, pages, "a batch of " + operations + " operations");
        } else if (type == RecordTypes.CREATE_TABLE) { // rare: decoded whole
            LogicalRecords.CreateTable c = LogicalRecords.decodeCreateTable(payload);
            int pages = ConfigLimits.tableCreationPages(c.options().partitions());
            if (pages > worstPages) note(lsn, pages, "the creation of table " + c.name() + " with " + c.options().partitions() + " partitions");
        }
    }

    private void note(long lsn, int pages, String change) {
        worstPages = pages;
        worstLsn = lsn;
        worstChange = change;
    }

    /** Refuses {@code memory}, the store's data region, when the largest batch to replay may not fit half of it. */
    void refuseSmaller(PageMemory memory, VarveConfig config) {
        if (worstPages <= memory.maxHeadroom()) return;
        long needed = 2L * worstPages * pageSize;
        long neededMiB = (needed + (1L << 20) - 1) >> 20;
        throw new IllegalArgumentException("dataRegionSize of " + config.dataRegionSize() + " bytes (" + memory.capacityPages()
                + " pages) is too small to recover this store: its WAL holds " + worstChange + " at LSN " + worstLsn
                + ", which may touch ~" + worstPages + " pages, more than half the region, and recovery must replay it whole;"
                + " it was written with a larger dataRegionSize. Open with dataRegionSize of at least " + neededMiB
                + " MiB (e.g. the size it ran with); once it has recovered, a smaller one works. Nothing was changed");
    }
}
