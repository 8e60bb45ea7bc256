package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.checkpoint.Checkpointer;
import dev.varve.checkpoint.Throttle;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.spi.LoggedValue;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.store.PageStore;
import dev.varve.core.tree.BPlusTree;
import dev.varve.core.tree.PageLayout;
import dev.varve.core.util.StoreThreads;
import dev.varve.core.wal.Wal;
import dev.varve.core.wal.WalOpenScan;
import dev.varve.core.wal.WalSegmentDescriptor;
import dev.varve.recovery.Recovery;
import dev.varve.recovery.RecoveryReport;
import dev.varve.recovery.RecoveryStart;
import dev.varve.snapshot.ArchiveSettings;
import dev.varve.snapshot.SnapshotArchive;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.StampedLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The wired store: page store, page memory, WAL, checkpointer, catalog and partitions, and the write path that
 * ties them together. A write appends its WAL record and applies its page changes inside the partition's critical
 * section, holding the checkpoint read lock, so the WAL order is the order pages changed in (I6) and a checkpoint
 * mark is a clean cut. Replay runs the same apply code.
 *
 * <p>Any failure after a record was appended (an IO error, a corrupt page) leaves page memory behind the WAL; the
 * engine then refuses every further write, and reads of the live state, naming the cause: reopening recovers from the
 * WAL.
 */
final class Engine {
    final VarveConfig config;
    /** WAL_PHYSICAL: the page log names a put's value in its logical record ({@link LoggedValue}); nobody else reads it. */
    private final boolean logsPages;
    final PageStore store;
    final PageMemory memory;
    final Wal wal;
    final Checkpointer checkpointer;
    final SnapshotArchive archive;
    final int maxKeyBytes;
    /** What a key, a value and a batch may be, checked before anything is logged. */
    final InputLimits limits = new InputLimits(this);
    final LongAdder writes = new LongAdder();
    final LongAdder reads = new LongAdder();
    final ChangePublisher changes = new ChangePublisher();
    private final ReadWriteLock checkpointLock = new StampedLock().asReadWriteLock();
    final Snapshots snapshots = new Snapshots(this, checkpointLock);
    private final Throttle throttle;
    final TableRegistry tables = new TableRegistry(this);
    /** Null for a read-only open of a directory no writer ever locked. */
    private final StoreLock dirLock;
    /** The archive directory has its own lock: two stores must not share an archive, whatever their paths. */
    private final StoreLock archiveDirLock;
    /** Opened by {@link Varve#openReadOnly}: every change stays in memory, writes are refused. */
    final boolean readOnly;
    private RecoveryReport recovery;
    /** Threads that replayed partitions in parallel at open (0: the opening thread alone); tests read it. */
    int replayWorkers;
    private volatile Throwable failure;
    private volatile boolean closed;
    /** Held for the whole of a close: a second caller waits for the first to finish, then finds it closed. */
    private final Object closing = new Object();

    /**
     * Opens the store. Everything that can be decided from the files is decided before the first byte is written:
     * the checkpoint markers say where recovery starts, the WAL is validated from there to its end, and the archive
     * is loaded and checked; only then are a torn WAL tail cut and recovery run.
     */
    private Engine(VarveConfig config, FileIOFactory io, boolean readOnly, boolean truncateDamagedWal, Agents agents) {
        this.config = config;
        this.logsPages = config.recoveryMode() == RecoveryMode.WAL_PHYSICAL;
        this.readOnly = readOnly;
        this.maxKeyBytes = BPlusTree.maxKeyBytes(config.pageSize());
        this.dirLock = readOnly ? StoreLock.acquireShared(config.path(), "store") : StoreLock.acquire(config.path(), "store");
        Deque<AutoCloseable> opened = new ArrayDeque<>(); // closed in reverse if open fails
        if (dirLock != null) opened.push(dirLock::release);
        try {
            StoreLock archiveLock = readOnly ? StoreLock.acquireShared(config.archivePath(), "archive")
                    : StoreLock.acquire(config.archivePath(), "archive");
            this.archiveDirLock = archiveLock;
            opened.push(() -> release(archiveLock));
            CheckpointMarkers markers = new CheckpointMarkers(io, config.path().resolve("checkpoints"));
            RecoveryStart start = RecoveryStart.decide(markers, config.pageSize());
            Path walDir = config.path().resolve("wal");
            // with no checkpoint ever completed, no segment was ever deleted: the WAL must start at its first LSN
            long neededFrom = start.latest() == null ? WalSegmentDescriptor.firstLsn(0, config.walSegmentSize()) : start.neededFrom();
            WalOpenScan walScan;
            try {
                walScan = WalOpenScan.run(io, walDir, config.walSegmentSize(), config.walSyncMode(), neededFrom, truncateDamagedWal);
            } catch (CorruptionException e) {
                throw start.explain(e, markers);
            }
            start.checkWalWitness(walScan.lastOf(RecordTypes.CHECKPOINT_STARTED), markers);
            this.archive = new SnapshotArchive(io, ArchiveSettings.builder(config.archivePath(), config.retention()).pageSize(config.pageSize())
                    .skippyLevels(config.skippyLevels()).skippyNodeEntries(config.skippyNodeEntries()).captureBufferBytes(config.captureBufferSize())
                    .segmentBytes(config.archiveSegmentSize()).pageWindow(config.snapshotPageWindow()).diffChain(config.snapshotDiffChain()).build());
            opened.push(archive);
            archive.useAgents(agents);
            CheckpointMarker recovered = start.latest();
            archive.check(recovered == null ? neededFrom : recovered.markLsn(), recovered == null);
            this.store = new PageStore(io, config.path().resolve("pages"), config.pageSize());
            opened.push(store);
            this.memory = new PageMemory(store, config.dataRegionSize(), config.checkpointBufferSize());
            opened.push(memory);
            // the first write: the markers, the WAL from where recovery reads and the archive were found sound (a page
            // is checked when it is read: damage in one that replay reads is found after recovery's first steps)
            this.wal = Wal.open(walScan, config.walFlushFrequency(), agents);
            opened.push(wal);
            store.tidy();
            this.checkpointer = new Checkpointer(config, memory, wal, markers, checkpointLock, PageLayout::unusedRange, agents);
            opened.push(checkpointer);
            this.throttle = checkpointer.throttle();
            archive.attach(memory); // after the physical-WAL hook, whose deltas must see SavedAfter change
            checkpointer.addListener(archive);
            LogicalReplayer replayer = new LogicalReplayer(this, agents.parallel());
            this.recovery = new Recovery(memory, wal, markers, checkpointer, start).run(replayer, !readOnly);
            this.replayWorkers = replayer.workersStarted();
            if (!readOnly) { // a read-only store never changes after its in-memory recovery
                checkpointer.start();
                if (recovery.checkpointPending()) checkpointer.request("recovery"); // its failure fails the checkpointer, as any checkpoint's does
            }
        } catch (RuntimeException | Error e) {
            for (AutoCloseable c : opened) {
                try {
                    c.close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /**
     * Opens the store with the store's name on the opening thread and the threads it starts ({@link StoreThreads});
     * a writable open creates the directory, a read-only one gets a {@link MemoryOverlayIO} (see {@link Varve#openReadOnly}).
     */
    static Engine open(VarveConfig config, FileIOFactory io, boolean readOnly, boolean truncateDamagedWal) {
        return open(config, io, readOnly, truncateDamagedWal, Agents.dedicated());
    }

    /** As above, with the background agents run by {@code agents}: the test seam that steps them by hand. */
    static Engine open(VarveConfig config, FileIOFactory io, boolean readOnly, boolean truncateDamagedWal, Agents agents) {
        if (!readOnly) {
            try {
                io.createDirectories(config.path());
            } catch (IOException e) {
                throw new StorageException("cannot create the store directory", config.path(), e);
            }
        }
        StoreThreads.Scope named = StoreThreads.opening(config.name());
        try {
            return new Engine(config, io, readOnly, truncateDamagedWal, agents);
        } finally {
            named.close();
        }
    }

    RecoveryReport recoveryReport() {
        return recovery;
    }

    // ---------------------------------------------------------------- replay (LogicalReplayer)

    /** The page change of one put or remove: the write path and replay both run it. */
    static boolean applyOp(PartitionHandle h, byte[] key, byte[] value) {
        return value == null ? h.tree.remove(key) : h.tree.put(key, value);
    }

    /**
     * {@link #applyOp} of the operation at {@code opOffset} of the batch record being applied, telling the physical
     * page log where the record holds its value ({@link LoggedValue}).
     */
    private boolean applyLoggedOp(PartitionHandle h, byte[] key, byte[] value, int opOffset) {
        if (logsPages && value != null) LoggedValue.value(LogicalRecords.valueOffset(opOffset, key), value.length);
        else if (logsPages) LoggedValue.value(0, 0); // a remove writes no value
        return applyOp(h, key, value);
    }

    // ---------------------------------------------------------------- tables (TableRegistry)

    TableHandle table(String name) {
        return tables.table(name);
    }

    TableHandle table(String name, TableOptions options) {
        return tables.table(name, options);
    }

    TableHandle existingTable(String name) {
        return tables.existing(name);
    }

    void checkTablesCreatable(Collection<String> names) {
        tables.checkCreatable(names);
    }

    List<String> tableNames() {
        return tables.names();
    }

    void checkTableName(String name) {
        TableRegistry.checkName(name);
    }

    // ---------------------------------------------------------------- write path

    /** Pages a put of this size may dirty: its overflow chain plus a split path. */
    private int pagesFor(byte[] key, byte[] value) {
        return memory.headroomFor(key.length + (value == null ? 0L : value.length), 1);
    }

    /** Put ({@code value != null}) or remove of one key in one partition; true when the key was present. */
    boolean write(PartitionHandle h, byte[] key, byte[] value) {
        boolean present = logged(pagesFor(key, value), List.of(h), RecordTypes.DATA_BATCH, () -> LogicalRecords.encodeSingle(h.fileId, key, value),
                () -> value != null || h.tree.get(key) != null, // removing an absent key logs nothing
                () -> applyLoggedOp(h, key, value, LogicalRecords.FIRST_OP));
        writes.increment();
        return present;
    }

    /** An atomic batch: one WAL record, every touched partition locked in file-id order. */
    void write(List<LogicalRecords.Op> ops) {
        if (ops.isEmpty()) return;
        Batch b = batch(ops);
        logged(b.pages(), b.locked(), RecordTypes.DATA_BATCH, () -> LogicalRecords.encodeBatch(ops), () -> true, b.change());
        writes.add(ops.size());
    }

    /**
     * An atomic batch and, right after it, the declaration of a snapshot of rank {@code rank} that holds it, with
     * ONE commit for both records. The batch is applied holding the checkpoint write lock rather than the read lock,
     * so no write is in flight at the declaration (I9) and nothing comes between the two records; the snaprec is
     * appended after the batch's record, so the commit that makes it durable makes the batch durable too: under
     * {@code FSYNC} one group-commit force instead of two. An empty batch is a plain declaration.
     */
    long writeAndSnapshot(List<LogicalRecords.Op> ops, int rank) {
        snapshots.checkRank(rank);
        if (ops.isEmpty()) return snapshots.snapshotNow(rank);
        Batch b = batch(ops);
        Snapshots.Declared d = underCut(checkpointLock.writeLock(), b.pages(), () -> {
            logAndApply(b.locked(), RecordTypes.DATA_BATCH, () -> LogicalRecords.encodeBatch(ops), () -> true, b.change());
            return snapshots.declareLocked(rank, null); // not reached when the batch failed: no snapshot without its batch
        });
        writes.add(ops.size());
        wal.commit(d.lsn());
        return d.id();
    }

    /** A checked batch: its partitions in file-id order (the locking order), its page head-room and its change. */
    private record Batch(List<PartitionHandle> locked, int pages, Change change) {
    }

    private Batch batch(List<LogicalRecords.Op> ops) {
        List<PartitionHandle> locked = new ArrayList<>();
        long keyAndValueBytes = 0;
        for (LogicalRecords.Op op : ops) {
            PartitionHandle h = tables.partitionOf(op.fileId());
            if (!locked.contains(h)) locked.add(h);
            keyAndValueBytes += op.key().length + (op.value() == null ? 0 : op.value().length);
        }
        limits.checkBatch(LogicalRecords.batchBytes(ops), keyAndValueBytes, ops.size());
        locked.sort(Comparator.comparingInt(h -> h.fileId));
        return new Batch(locked, memory.headroomFor(keyAndValueBytes, ops.size()), () -> {
            int at = LogicalRecords.FIRST_OP;
            for (LogicalRecords.Op op : ops) {
                applyLoggedOp(tables.partitionOf(op.fileId()), op.key(), op.value(), at);
                at += op.encodedBytes();
            }
            return true;
        });
    }

    /** Empties a partition. */
    void destroy(PartitionHandle h) {
        logged(64, List.of(h), RecordTypes.DESTROY_PARTITION, () -> LogicalRecords.encodeDestroy(h.fileId), () -> true, () -> {
            h.tree.clear();
            return true;
        });
    }

    /**
     * The one write path: data-region head-room and throttling, the checkpoint read lock, the partitions' write
     * locks (in file-id order), then — unless {@code worthLogging} says there is nothing to do — the WAL record and
     * its page changes, and after the locks are released the commit as {@code walSyncMode} promises.
     */
    boolean logged(int pages, List<PartitionHandle> locked, int type, Supplier<ByteBuffer> record, BooleanSupplier worthLogging,
                           Change change) {
        Logged l = underCut(checkpointLock.readLock(), pages, () -> logAndApply(locked, type, record, worthLogging, change));
        if (l == Logged.NOTHING) return false;
        wal.commit(l.lsn());
        return l.result();
    }

    /**
     * Runs {@code body} holding {@code cut}, one side of the checkpoint lock, with {@code pages} of head-room
     * reserved (and throttled) before the lock is taken: the checkpointer takes that lock, so a writer must not
     * wait for it while holding it.
     */
    private <T> T underCut(Lock cut, int pages, Supplier<T> body) {
        checkNotReadOnly();
        throttle.beforeWrite(pages);
        try {
            cut.lock();
            try {
                return body.get();
            } finally {
                cut.unlock();
            }
        } finally {
            throttle.afterWrite(pages);
        }
    }

    /** What a logged change left: the LSN its commit must reach and what its apply returned. */
    private record Logged(long lsn, boolean result) {
        /** Nothing was worth logging: nothing to commit. */
        static final Logged NOTHING = new Logged(-1, false);
    }

    /** Appends the record and applies its change under the partitions' write locks; the caller holds the cut. */
    private Logged logAndApply(List<PartitionHandle> locked, int type, Supplier<ByteBuffer> record, BooleanSupplier worthLogging,
                               Change change) {
        for (PartitionHandle h : locked) h.lock.writeLock().lock();
        try {
            checkWritable();
            // a partition whose page file failed (a read error) would fail the apply after the record is logged: the
            // write would poison the store and come back at the next open though it was reported failed
            for (PartitionHandle h : locked) store.checkUsable(h.fileId);
            if (!worthLogging.getAsBoolean()) return Logged.NOTHING;
            ByteBuffer payload = record.get();
            ByteBuffer published = changes.active() ? payload.duplicate() : null; // read after the apply
            long lsn = wal.append(type, payload);
            boolean result;
            if (logsPages) LoggedValue.record(lsn, payload); // payloads are built from index 0
            try {
                result = applyLogged(change);
            } finally {
                if (logsPages) LoggedValue.clear();
            }
            if (published != null) changes.logged(type, published, lsn);
            return new Logged(lsn, result);
        } finally {
            for (int i = locked.size() - 1; i >= 0; i--) locked.get(i).lock.writeLock().unlock();
        }
    }

    interface Change {
        boolean apply();
    }

    /** Applies a change whose record is already in the WAL; a failure here poisons the engine. */
    private boolean applyLogged(Change c) {
        try {
            return c.apply();
        } catch (RuntimeException | Error e) {
            failure = e;
            checkpointer.refuseFurther(e);
            throw new StorageException("a logged write could not be applied (" + e + "); the store refuses further writes — reopen it to recover", null, e);
        }
    }

    // ---------------------------------------------------------------- reads

    /** Batches of a partition's current state, each copied under its read lock. */
    PartitionCursor.BatchSource scanSource(PartitionHandle h) {
        return (from, inclusive, to, max) -> {
            checkReadable();
            h.lock.readLock().lock();
            try {
                return h.tree.scan(from, inclusive, to, max);
            } catch (StorageException e) {
                throw closedOr(e);
            } finally {
                h.lock.readLock().unlock();
            }
        };
    }

    byte[] get(PartitionHandle h, byte[] key) {
        checkReadable();
        h.lock.readLock().lock();
        try {
            reads.increment();
            return h.tree.get(key);
        } catch (StorageException e) {
            throw closedOr(e);
        } finally {
            h.lock.readLock().unlock();
        }
    }

    /** A read that failed because a close ran under it (its files closed) is told the store is closed, not damaged. */
    StorageException closedOr(StorageException e) {
        checkOpen();
        return e;
    }

    long size(PartitionHandle h) {
        checkReadable();
        h.lock.readLock().lock();
        try {
            return h.tree.size();
        } finally {
            h.lock.readLock().unlock();
        }
    }

    // ---------------------------------------------------------------- life cycle

    void checkOpen() {
        if (closed) throw new IllegalStateException("the store is closed");
    }

    /**
     * Refuses reads of the live state once the WAL failed or a logged change failed to apply: page memory may then
     * hold a write its caller was told failed, or lack one the WAL will replay — state a reopen need not show. (A
     * failed checkpoint leaves page memory sound: reads go on. Snapshot views read what was declared before.)
     */
    void checkReadable() {
        checkOpen();
        Throwable f = pagesUnsure();
        if (f != null) throw new StorageException("the store failed earlier (" + f + "): its pages may hold writes that were reported "
                + "failed, so it refuses reads of its live state too; reopen it to recover", null, f);
    }

    /** Fails a change of a read-only store before anything happens. */
    void checkNotReadOnly() {
        if (readOnly) throw new ReadOnlyStoreException("store " + config.path() + " was opened read-only; writes, snapshots, ranks and checkpoints need Varve.open");
    }

    void checkWritable() {
        checkOpen();
        checkNotReadOnly();
        Throwable f = failure();
        if (f != null) throw new StorageException("the store failed earlier (" + f + ") and refuses writes; reopen it to recover", null, f);
    }

    /** The first failure that stops writes (a change after its record, the WAL, the checkpointer), or null. */
    Throwable failure() {
        Throwable f = pagesUnsure();
        return f != null ? f : checkpointer.failure();
    }

    /** The failure after which page memory may disagree with the WAL (a change after its record, the WAL), or null. */
    private Throwable pagesUnsure() {
        Throwable f = failure;
        return f != null ? f : wal.failure();
    }

    boolean isClosed() {
        return closed;
    }

    /** Clean shutdown: no write in flight, a final checkpoint, files closed. Callers racing each other close once. */
    void close() {
        synchronized (closing) {
            if (closed) return;
            checkpointLock.writeLock().lock();
            try {
                closed = true;
            } finally {
                checkpointLock.writeLock().unlock();
            }
            Throwable shutdownFailure = null;
            try {
                checkpointer.stop();
                if (!readOnly && failure() == null) checkpointer.checkpoint("shutdown");
            } catch (RuntimeException | Error e) {
                shutdownFailure = e;
                throw e;
            } finally {
                // every resource is released even when one fails to close (a full disk refusing the archive's last writes);
                // a failed shutdown checkpoint stays the error reported (the root cause), with the close's failures
                // suppressed in it rather than replacing it
                try {
                    Closeables.closeAll(checkpointer, archive, wal, memory, store, () -> release(dirLock), () -> release(archiveDirLock));
                } catch (RuntimeException e) {
                    if (shutdownFailure == null) throw e;
                    shutdownFailure.addSuppressed(e);
                }
            }
        }
    }

    /** Releases a directory lock; a read-only open of a directory no writer ever locked holds none. */
    private static void release(StoreLock lock) {
        if (lock != null) lock.release();
    }

    /**
     * Simulated crash for tests: stops threads and releases files. Whatever fails on the way (a file system that
     * already "died" refuses every write) is ignored: the process is gone either way.
     */
    void halt() {
        closed = true;
        for (Runnable r : new Runnable[]{checkpointer::close, wal::halt, archive::close, memory::close, store::close, () -> release(dirLock),
                () -> release(archiveDirLock)}) {
            try {
                r.run();
            } catch (RuntimeException ignored) {
                // a dead process releases what it held without flushing anything
            }
        }
    }
}
