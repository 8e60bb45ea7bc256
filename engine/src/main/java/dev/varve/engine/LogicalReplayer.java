package dev.varve.engine;

import dev.varve.core.io.StorageException;
import dev.varve.core.spi.LogicalReplay;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.tree.BPlusTree;

import java.nio.ByteBuffer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What recovery replays the logical WAL records into: the catalog and the archive are loaded first, then each record
 * runs the same apply code a live write runs ({@link Engine#applyOp}), so replay and the write path cannot drift.
 * Data operations go to {@link ReplayWorkers} by partition when {@code recoveryThreads} and the cores allow; every other
 * record waits for them first, because it orders partitions against each other.
 */
final class LogicalReplayer implements LogicalReplay {
    private static final Logger LOG = LoggerFactory.getLogger(LogicalReplayer.class);
    private final Engine engine;
    private int workerCount; // 0 from the first record on when the OS refused the workers' threads
    private ReplayWorkers workers; // started at the first data record
    private int workersStarted;
    /** The rank of the snapshot the last logical record replayed owes: a writeAndSnapshot batch whose snaprec did not follow. */
    private int owedRank;
    /** The snapshot of each rank record replay will apply, one per record ({@link RaisesToReplay}). */
    private final long[] raisesAhead;

    /**
     * Replays with the store's {@code recoveryThreads}, one per core at most; with one, or when {@code parallel} is
     * false (agents stepped by hand: the store starts no thread), the opening thread alone. {@code raisesAhead}: the
     * snapshot of each rank record it will apply, which the archive keeps live until that raise.
     */
    LogicalReplayer(Engine engine, boolean parallel, long[] raisesAhead) {
        this.engine = engine;
        this.raisesAhead = raisesAhead;
        this.workerCount = parallel ? ReplayWorkers.count(engine.config.recoveryThreads()) : 0;
    }

    @Override
    public void beforeReplay(boolean emptyStore, long markLsn) {
        engine.archive.replaying(raisesAhead); // before recover starts the archiver: the records alone apply the policy
        engine.archive.recover(markLsn, emptyStore);
        engine.tables.load(emptyStore);
    }

    @Override
    public void apply(int type, ByteBuffer payload, long lsn, int reservedPages) {
        if (type == RecordTypes.DATA_BATCH) {
            owedRank = applyData(payload, reservedPages);
            return;
        }
        owedRank = 0; // the snaprec that follows such a batch declares its snapshot (nothing else can come between them)
        drain();
        applyOther(type, payload, lsn);
        engine.memory.releaseHeadroom(reservedPages);
    }

    private void applyOther(int type, ByteBuffer payload, long lsn) {
        switch (type) {
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
                throw new StorageException("unknown logical WAL record type " + type + " at LSN " + lsn);
        }
    }

    /**
     * Applies a data record, or queues it with the workers, who return its {@code reservedPages} of head-room once it is
     * applied; returns the rank of the snapshot it owes ({@link LogicalRecords#forEachOp}).
     */
    private int applyData(ByteBuffer payload, int reservedPages) {
        if (workers == null && workerCount >= 2) startWorkers();
        int operations = LogicalRecords.operationCount(payload);
        // each value raises the store's largest value before the next record reserves (freedPagesBound)
        WritePath values = engine.writePath;
        if (workers == null || operations == 0) {
            int owed = LogicalRecords.forEachOp(payload, (fileId, b, keyOffset, keyLength, valueOffset, valueLength) -> {
                values.valueGiven(valueLength);
                Engine.applyOp(engine.tables.partitionOf(fileId), LogicalRecords.copy(b, keyOffset, keyLength),
                        valueLength < 0 ? null : LogicalRecords.copy(b, valueOffset, valueLength));
            });
            engine.memory.releaseHeadroom(reservedPages);
            return owed;
        }
        // the workers make the key and value arrays: the reading thread copies each operation's bytes once, into a chunk
        workers.beginRecord(reservedPages, operations);
        return LogicalRecords.forEachOp(payload, (fileId, b, keyOffset, keyLength, valueOffset, valueLength) -> {
            values.valueGiven(valueLength);
            workers.submit(engine.tables.partitionOf(fileId), b, keyOffset, keyLength, valueOffset, valueLength);
        });
    }

    /**
     * Starts the workers at the first data record. When the OS refuses a thread (unable to create native thread), the
     * opening thread replays alone: the workers only speed replay up, and a store that needed them to open would not
     * open at all under that thread limit.
     */
    private void startWorkers() {
        try {
            workers = new ReplayWorkers(workerCount, engine.memory::releaseHeadroom);
            workersStarted = workerCount;
        } catch (OutOfMemoryError e) {
            LOG.warn("cannot start {} replay threads ({}); replaying on the opening thread alone", workerCount, e.toString());
            workerCount = 0;
        }
    }

    /**
     * Each operation of a data record may remove or replace one value, whose overflow chain is at most that of the
     * largest value the store was given before this record: in the pages recovery starts from (their checkpoint's
     * marker bounds them) or in a record replayed before this one ({@link #applyData} raises the mark by each of its
     * values). Nothing else frees a chain. A store of small values so reserves a page an operation, not the 258 of a
     * 1 MiB value at 4 KiB pages, and keeps that many more records in flight to the workers.
     */
    @Override
    public long freedPagesBound(int type, ByteBuffer payload) {
        if (type != RecordTypes.DATA_BATCH) return 0;
        return (long) LogicalRecords.operationCount(payload) * BPlusTree.overflowPagesAtMost(engine.memory.pageSize(), engine.writePath.largestValue());
    }

    /** A data record starts with its operation count; other records keep the bound from their size. */
    @Override
    public int operations(int type, ByteBuffer payload) {
        return type == RecordTypes.DATA_BATCH ? LogicalRecords.operationCount(payload) : LogicalReplay.super.operations(type, payload);
    }

    /**
     * The rank of the snapshot of a {@code writeAndSnapshot} whose batch was the last record replayed and whose
     * snaprec a crash cut off, 0 when none: the store declares it before anything else ({@link Snapshots#declareOwed}).
     */
    int owedSnapshotRank() {
        return owedRank;
    }

    /** Worker threads this replay ran on: 0 when the opening thread applied every record itself. */
    int workersStarted() {
        return workersStarted;
    }

    @Override
    public void drain() {
        if (workers != null) workers.drain();
    }

    @Override
    public boolean awaitApplied() {
        return workers != null && workers.awaitApplied();
    }

    @Override
    public void endReplay() {
        if (workers != null) {
            workers.close();
            workers = null;
        }
    }
}
