package dev.varve.engine;

import dev.varve.core.spi.RecordTypes;
import dev.varve.core.wal.WalRecordVisitor;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The snapshot of every rank record recovery will replay, seen by the open's WAL scan (no second pass over the log):
 * replay keeps each of them live until its raise is replayed ({@code SnapshotArchive#replaying}), because the record
 * was appended only while the snapshot was live.
 */
final class RaisesToReplay implements WalRecordVisitor {
    /** Records from here on are replayed: the recovered checkpoint's mark. */
    private final long replayFrom;
    private long[] ids = new long[16];
    private int count;

    RaisesToReplay(long replayFrom) {
        this.replayFrom = replayFrom;
    }

    @Override
    public void visit(long lsn, int type, ByteBuffer payload) {
        if (lsn < replayFrom || type != RecordTypes.RANK) return;
        if (count == ids.length) ids = Arrays.copyOf(ids, count * 2);
        ids[count++] = LogicalRecords.decodeRank(payload).id();
    }

    /** The snapshot of each rank record from the mark on, one per record, in LSN order. */
    long[] ids() {
        return Arrays.copyOf(ids, count);
    }
}
