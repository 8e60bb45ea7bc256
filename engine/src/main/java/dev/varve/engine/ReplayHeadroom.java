package dev.varve.engine;

import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.wal.WalRecordVisitor;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The largest change recovery will replay, seen by the open's WAL scan, against the data region the store is opened
 * with. A batch (or a table's creation) is applied whole, and a page it dirtied cannot be evicted before a checkpoint,
 * which cannot run in the middle of it: one a larger {@code dataRegionSize} took, replayed into a smaller one, filled
 * the region and waited two minutes for a clean page, then failed asking whether the checkpointer was stuck. A region
 * with fewer pages than such a change certainly dirties is refused before anything is written. Certainly: a batch
 * needs at least the pages its keys and values fill (each key counted once, as its last operation leaves it), a
 * table's creation its partitions' pages; the write's own head-room estimate is far larger (16 pages an operation),
 * and refusing by it would refuse the small regions the {@code varve} tool opens crashed stores with, which replay
 * such batches well.
 */
final class ReplayHeadroom implements WalRecordVisitor {
    /** Bytes a batch record holds besides keys and values: its count, a snapshot rank, and per operation at most a kind, a file id and two lengths. */
    private static final int FIXED_BYTES = LogicalRecords.FIRST_OP + LogicalRecords.SNAPSHOT_RANK_BYTES;
    private static final int OP_BYTES = 1 + 4 + 4 + 4;

    private final int pageSize;
    /** The frames of the region the store is opened with. */
    private final long capacityPages;
    /** Records from here on are replayed: the recovered checkpoint's mark (records before it a restore puts back). */
    private final long replayFrom;
    private long worstPages = -1;
    private long worstLsn;
    /** What the worst change is, for the message. */
    private String worstChange;

    ReplayHeadroom(VarveConfig config, long replayFrom) {
        this.pageSize = config.pageSize();
        this.capacityPages = config.dataRegionSize() / config.pageSize();
        this.replayFrom = replayFrom;
    }

    @Override
    public void visit(long lsn, int type, ByteBuffer payload) {
        if (lsn < replayFrom) return;
        if (type == RecordTypes.DATA_BATCH) {
            int operations = LogicalRecords.operationCount(payload);
            long upTo = Math.max(0, payload.remaining() - FIXED_BYTES - (long) OP_BYTES * operations) / pageSize;
            if (upTo <= capacityPages || upTo <= worstPages) return; // the common case: no decoding
            long pages = storedBytes(payload) / pageSize; // keys written over in the batch count once
            if (pages > worstPages) note(lsn, pages, "a batch of " + operations + " operations");
        } else if (type == RecordTypes.CREATE_TABLE) { // rare: decoded whole
            LogicalRecords.CreateTable c = LogicalRecords.decodeCreateTable(payload);
            int pages = ConfigLimits.tableCreationPages(c.options().partitions());
            if (pages > worstPages) note(lsn, pages, "the creation of table " + c.name() + " with " + c.options().partitions() + " partitions");
        }
    }

    /** The key and value bytes a batch leaves stored: per key, as its last operation leaves it. */
    private static long storedBytes(ByteBuffer payload) {
        List<LogicalRecords.Op> ops = LogicalRecords.decodeBatch(payload);
        Map<String, Long> last = new HashMap<>();
        for (LogicalRecords.Op op : ops) {
            String key = op.fileId() + "/" + HexFormat.of().formatHex(op.key());
            last.put(key, op.value() == null ? 0L : (long) op.key().length + op.value().length);
        }
        long bytes = 0;
        for (long b : last.values()) bytes += b;
        return bytes;
    }

    private void note(long lsn, long pages, String change) {
        worstPages = pages;
        worstLsn = lsn;
        worstChange = change;
    }

    /** Refuses {@code memory}, the store's data region, when the largest change to replay certainly does not fit it. */
    void refuseSmaller(PageMemory memory, VarveConfig config) {
        if (worstPages <= memory.capacityPages()) return;
        long neededMiB = (worstPages * pageSize + (1L << 20) - 1) >> 20;
        throw new IllegalArgumentException("dataRegionSize of " + config.dataRegionSize() + " bytes (" + memory.capacityPages()
                + " pages) is too small to recover this store: its WAL holds " + worstChange + " at LSN " + worstLsn
                + ", which fills at least " + worstPages + " pages, and recovery must replay it whole, with none of them evicted;"
                + " it was written with a larger dataRegionSize. Open with dataRegionSize of more than " + neededMiB
                + " MiB (e.g. the size it ran with); once it has recovered, a smaller one works. Nothing was changed");
    }
}
