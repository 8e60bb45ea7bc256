package dev.varve.engine;

import dev.varve.core.spi.RecordTypes;
import dev.varve.snapshot.AsOfPages;
import dev.varve.snapshot.DroppedSnapshot;
import dev.varve.snapshot.SnapshotRecord;

import java.time.Instant;
import java.util.concurrent.locks.ReadWriteLock;

/**
 * The engine's snapshot side: declaring snapshots, raising their rank, and turning an id into a live snapshot or
 * the exception saying why there is none. A declaration or a rank change is a WAL record appended under the
 * checkpoint write lock — no write in flight, so the snaprec is a cut of the WAL order (I9) — and committed after
 * the lock is released, as {@code walSyncMode} promises, riding the group commit of the writes around it.
 */
final class Snapshots {
    private final Engine engine;
    private final ReadWriteLock checkpointLock;

    Snapshots(Engine engine, ReadWriteLock checkpointLock) {
        this.engine = engine;
        this.checkpointLock = checkpointLock;
    }

    /**
     * Declares a snapshot: writes that completed before are in it and writes that start after are not (I9).
     */
    long snapshotNow(int rank) {
        return declare(rank, null);
    }

    /** Declares a snapshot and, in the same instant (no write in flight), subscribes {@code l} to what follows it. */
    ChangeFeed follow(int rank, ChangeListener l) {
        return engine.changes.feed(declare(rank, l), l);
    }

    private long declare(int rank, ChangeListener subscriber) {
        checkChange(rank);
        return declareCommitted(() -> declareLocked(rank, subscriber)).id();
    }

    /** Runs {@code declaration} under the checkpoint write lock, then commits its snaprec (in memory alone when read-only). */
    private Declared declareCommitted(java.util.function.Supplier<Declared> declaration) {
        Declared d;
        checkpointLock.writeLock().lock();
        try {
            d = declaration.get();
        } finally {
            checkpointLock.writeLock().unlock();
        }
        if (!engine.readOnly) engine.wal.commit(d.lsn());
        return d;
    }

    /** A declared snapshot and the LSN of its snaprec, which the declaration's commit must reach. */
    record Declared(long id, long lsn) {
    }

    /**
     * Appends the snaprec and declares it to the archive. The caller holds the checkpoint write lock and, once it
     * is released, commits up to the returned LSN.
     */
    Declared declareLocked(int rank, ChangeListener subscriber) {
        engine.checkWritable();
        return appendDeclaration(rank, subscriber);
    }

    /**
     * Open, after replay, before any write: declares the snapshot of a {@code writeAndSnapshot} whose batch recovery
     * replayed as the last record but whose snaprec a crash cut off. The pair is one commit, so it is completed rather
     * than half kept: the batch survived whole, its snapshot is declared now (with the recovery's time), and the snaprec
     * appended to the WAL right where the lost one would have been. A read-only open declares it in memory alone, like
     * the rest of its recovery.
     */
    void declareOwed(int rank) {
        declareCommitted(() -> appendDeclaration(rank, null));
    }

    private Declared appendDeclaration(int rank, ChangeListener subscriber) {
        long id = engine.archive.nextId();
        long now = System.currentTimeMillis();
        long lsn = engine.wal.append(RecordTypes.SNAPSHOT, LogicalRecords.encodeSnapshot(id, rank, now));
        engine.archive.declare(id, rank, now, lsn);
        engine.changes.snapshot(lsn, id, rank);
        if (subscriber != null) engine.changes.add(subscriber);
        return new Declared(id, lsn);
    }

    /** What a declaration or a rank change checks before it takes a lock. */
    private void checkChange(int rank) {
        engine.checkOpen();
        engine.checkNotReadOnly();
        checkRank(rank);
    }

    /** Fails a rank outside the retention policy's levels, before anything happens. */
    void checkRank(int rank) {
        int levels = engine.config.retention().levelCount();
        if (rank < 1 || rank > levels) throw new IllegalArgumentException("rank must be in [1, " + levels + "] (the retention policy's levels), was " + rank);
    }

    /** Raises the rank of a live snapshot, logged like a write. */
    void rank(long id, int rank) {
        checkChange(rank);
        long lsn;
        checkpointLock.writeLock().lock();
        try {
            engine.checkWritable();
            SnapshotRecord r = liveSnapshot(id);
            if (rank < r.rank()) throw new IllegalArgumentException("snapshot " + id + " has rank " + r.rank() + "; a rank can only be raised, not to " + rank);
            if (rank == r.rank()) return; // accepted, and changes nothing: no record, so followers hear of no raise and its LSN stays
            // The archiver's keepFor check drops snapshots without the checkpoint lock, so it may have dropped this one
            // since it was found live: the archive then logs nothing (a logged raise would be replayed after a crash
            // that lost the drop), the raise is refused as for any dropped snapshot, and followers hear of no raise.
            lsn = engine.archive.rank(id, rank, () -> engine.wal.append(RecordTypes.RANK, LogicalRecords.encodeRank(id, rank)));
            if (lsn < 0) liveSnapshot(id);
            engine.changes.rank(lsn, id, rank);
        } finally {
            checkpointLock.writeLock().unlock();
        }
        engine.wal.commit(lsn);
    }

    SnapshotView asOf(long id) {
        return new SnapshotViewImpl(engine, openPages(id));
    }

    /** The page source as of live snapshot {@code id}; the caller closes it. */
    AsOfPages openPages(long id) {
        engine.checkOpen();
        AsOfPages pages = AsOfPages.open(engine.archive, engine.memory, liveSnapshot(id));
        if (pages == null) liveSnapshot(id); // dropped in between: says so
        return pages;
    }

    /** The live snapshot {@code id}, or the exception saying whether it was never declared or dropped (when, why). */
    private SnapshotRecord liveSnapshot(long id) {
        SnapshotRecord r = engine.archive.find(id);
        if (r != null) return r;
        DroppedSnapshot d = engine.archive.dropped(id);
        if (d != null) throw new SnapshotNotFoundException("snapshot " + id + " was dropped by the retention policy " + (d.byThen() ? "by " : "at ")
                + Instant.ofEpochMilli(d.droppedMillis()) + (d.byThen() ? " at the latest" : "") + ": " + d.why());
        throw new SnapshotNotFoundException("snapshot " + id + " was never declared (latest is " + engine.archive.latest() + ")");
    }
}
