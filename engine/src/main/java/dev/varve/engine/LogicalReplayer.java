package dev.varve.engine;

import dev.varve.core.io.StorageException;
import dev.varve.core.spi.LogicalReplay;
import dev.varve.core.spi.RecordTypes;

import java.nio.ByteBuffer;

/**
 * What recovery replays the logical WAL records into: the catalog and the archive are loaded first, then each record
 * runs the same apply code a live write runs ({@link Engine#applyOp}), so replay and the write path cannot drift.
 */
final class LogicalReplayer implements LogicalReplay {
    private final Engine engine;

    LogicalReplayer(Engine engine) {
        this.engine = engine;
    }

    @Override
    public void beforeReplay(boolean emptyStore, long markLsn) {
        engine.archive.recover(markLsn, emptyStore);
        engine.tables.load(emptyStore);
    }

    @Override
    public void apply(int type, ByteBuffer payload, long lsn) {
        switch (type) {
            case RecordTypes.DATA_BATCH:
                for (LogicalRecords.Op op : LogicalRecords.decodeBatch(payload)) Engine.applyOp(engine.tables.partitionOf(op.fileId()), op.key(), op.value());
                break;
            case RecordTypes.CREATE_TABLE: {
                LogicalRecords.CreateTable c = LogicalRecords.decodeCreateTable(payload);
                engine.tables.applyCreate(new Catalog.Entry(c.name(), c.tableId(), c.options()));
                break;
            }
            case RecordTypes.DESTROY_PARTITION:
                engine.tables.partitionOf(LogicalRecords.decodeDestroy(payload)).tree.clear();
                break;
            case RecordTypes.SNAPSHOT: {
                LogicalRecords.Snapshot s = LogicalRecords.decodeSnapshot(payload);
                engine.archive.declare(s.id(), s.rank(), s.declaredMillis(), lsn); // Retro stage 2: re-declared from its snaprec
                break;
            }
            case RecordTypes.RANK: {
                LogicalRecords.Snapshot s = LogicalRecords.decodeRank(payload);
                engine.archive.rank(s.id(), s.rank(), lsn); // false when the policy has dropped it since: it stays dropped
                break;
            }
            default:
                throw new StorageException("unknown logical WAL record type " + type + " at LSN " + lsn, null);
        }
    }
}
