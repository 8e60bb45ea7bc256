package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.checkpoint.Checkpointer;
import dev.varve.checkpoint.Throttle;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.Closeables;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.memory.PageMemory;
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
import dev.varve.snapshot.AsOfPages;
import dev.varve.snapshot.DroppedSnapshot;
import dev.varve.snapshot.SnapshotArchive;
import dev.varve.snapshot.SnapshotRecord;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The wired store: page store, page memory, WAL, checkpointer, catalog and partitions, and the write path that
 * ties them together. A write appends its WAL record and applies its page changes inside the partition's critical
 * section, holding the checkpoint read lock, so the WAL order is the order pages changed in (I6) and a checkpoint
 * mark is a clean cut. Replay runs the same apply code.
 *
 * <p>Any failure after a record was appended (an IO error, a corrupt page) leaves page memory behind the WAL; the
 * engine then refuses every further write, naming the cause: reopening recovers from the WAL.
 */
final class Engine {
    final VarveConfig config;
    final PageStore store;
    final PageMemory memory;
    final Wal wal;
    final Checkpointer checkpointer;
    final SnapshotArchive archive;
    final int maxKeyBytes;
    final LongAdder writes = new LongAdder();
    final LongAdder reads = new LongAdder();
    final ChangePublisher changes = new ChangePublisher();
    private final ReentrantReadWriteLock checkpointLock = new ReentrantReadWriteLock();
    private final Throttle throttle;
    final TableRegistry tables = new TableRegistry(this);
    /** Null for a read-only open of a directory no writer ever locked. */
    private final StoreLock dirLock;
    /** The archive directory has its own lock: two stores must not share an archive, whatever their paths. */
    private final StoreLock archiveDirLock;
    /** Opened by {@link #openReadOnly}: every change stays in memory, writes are refused. */
    final boolean readOnly;
    private RecoveryReport recovery;
    private volatile Throwable failure;
    private volatile boolean closed;

    /**
     * Opens the store. Everything that can be decided from the files is decided before the first byte is written:
     * the checkpoint markers say where recovery starts, the WAL is validated from there to its end, and the archive
     * is loaded and checked; only then are a torn WAL tail cut and recovery run.
     */
    private Engine(VarveConfig config, FileIOFactory io, boolean readOnly, boolean truncateDamagedWal, Agents agents) {
        this.config = config;
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
            this.store = new PageStore(io, config.path().resolve("pages"), config.pageSize());
            opened.push(store);
            this.memory = new PageMemory(store, config.dataRegionSize(), config.checkpointBufferSize());
            opened.push(memory);
            this.wal = Wal.open(walScan, config.walFlushFrequency(), agents); // the first write: the store was found sound
            opened.push(wal);
            this.checkpointer = new Checkpointer(config, memory, wal, markers, checkpointLock, PageLayout::unusedRange, agents);
            opened.push(checkpointer);
            this.throttle = checkpointer.throttle();
            archive.attach(memory); // after the physical-WAL hook, whose deltas must see SavedAfter change
            checkpointer.addListener(archive);
            this.recovery = new Recovery(memory, wal, markers, checkpointer, start).run(new LogicalReplayer(this));
            if (!readOnly) checkpointer.start(); // a read-only store never changes after its in-memory recovery
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

    /** Rejects a batch, before anything is logged, that the WAL or the data region cannot take in one piece. */
    void checkBatch(int bytes, long keyAndValueBytes, int operations) {
        if (bytes > wal.maxPayloadBytes()) throw new IllegalArgumentException("batch of " + bytes + " bytes exceeds the WAL record limit of "
                + wal.maxPayloadBytes() + " bytes; split it or raise walSegmentSize");
        int pages = memory.headroomFor(keyAndValueBytes, operations);
        if (pages > memory.maxHeadroom()) throw new IllegalArgumentException("batch of " + operations + " operations may touch ~" + pages
                + " pages, more than half the data region (" + memory.capacityPages() + " pages); split it or raise dataRegionSize");
    }


    void checkKey(byte[] key) {
        if (key == null) throw new IllegalArgumentException("key is null");
        if (key.length > maxKeyBytes) throw new IllegalArgumentException("key of " + key.length + " bytes exceeds the maximum of "
                + maxKeyBytes + " bytes (pageSize / 4)");
    }

    void checkValue(byte[] value) {
        if (value == null) throw new IllegalArgumentException("value is null (use remove to delete a key)");
        if (value.length > BPlusTree.MAX_VALUE_BYTES) throw new IllegalArgumentException("value of " + value.length
                + " bytes exceeds the maximum of " + BPlusTree.MAX_VALUE_BYTES + " bytes");
    }

    /** Put ({@code value != null}) or remove of one key in one partition; true when the key was present. */
    boolean write(PartitionHandle h, byte[] key, byte[] value) {
        boolean present = logged(pagesFor(key, value), List.of(h), RecordTypes.DATA_BATCH, () -> LogicalRecords.encodeSingle(h.fileId, key, value),
                () -> value != null || h.tree.get(key) != null, // removing an absent key logs nothing
                () -> applyOp(h, key, value));
        writes.increment();
        return present;
    }

    /** An atomic batch: one WAL record, every touched partition locked in file-id order. */
    void write(List<LogicalRecords.Op> ops) {
        if (ops.isEmpty()) return;
        List<PartitionHandle> locked = new ArrayList<>();
        long keyAndValueBytes = 0;
        for (LogicalRecords.Op op : ops) {
            PartitionHandle h = tables.partitionOf(op.fileId());
            if (!locked.contains(h)) locked.add(h);
            keyAndValueBytes += op.key().length + (op.value() == null ? 0 : op.value().length);
        }
        checkBatch(LogicalRecords.batchBytes(ops), keyAndValueBytes, ops.size());
        locked.sort(Comparator.comparingInt(h -> h.fileId));
        logged(memory.headroomFor(keyAndValueBytes, ops.size()), locked, RecordTypes.DATA_BATCH, () -> LogicalRecords.encodeBatch(ops), () -> true, () -> {
            for (LogicalRecords.Op op : ops) applyOp(tables.partitionOf(op.fileId()), op.key(), op.value());
            return true;
        });
        writes.add(ops.size());
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
        checkNotReadOnly();
        throttle.beforeWrite(pages);
        long lsn;
        boolean result;
        try {
            checkpointLock.readLock().lock();
            try {
                for (PartitionHandle h : locked) h.lock.writeLock().lock();
                try {
                    checkWritable();
                    if (!worthLogging.getAsBoolean()) return false;
                    ByteBuffer payload = record.get();
                    ByteBuffer published = changes.active() ? payload.duplicate() : null; // read after the apply
                    lsn = wal.append(type, payload);
                    result = applyLogged(change);
                    if (published != null) changes.logged(type, published, lsn);
                } finally {
                    for (int i = locked.size() - 1; i >= 0; i--) locked.get(i).lock.writeLock().unlock();
                }
            } finally {
                checkpointLock.readLock().unlock();
            }
        } finally {
            throttle.afterWrite(pages);
        }
        wal.commit(lsn);
        return result;
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
            throw new StorageException("a logged write could not be applied (" + e + "); the store refuses further writes — reopen it to recover", null, e);
        }
    }

    // ---------------------------------------------------------------- snapshots

    /**
     * Declares a snapshot: its snaprec is appended with no write in flight (under the checkpoint write lock), so
     * writes that completed before are in it and writes that start after are not (I9).
     */
    long snapshotNow(int rank) {
        return declare(rank, null);
    }

    /** Declares a snapshot and, in the same instant (no write in flight), subscribes {@code l} to what follows it. */
    ChangeFeed follow(int rank, ChangeListener l) {
        return changes.feed(declare(rank, l), l);
    }

    private long declare(int rank, ChangeListener subscriber) {
        checkOpen();
        checkNotReadOnly();
        int levels = config.retention().levelCount();
        if (rank < 1 || rank > levels) throw new IllegalArgumentException("rank must be in [1, " + levels + "] (the retention policy's levels), was " + rank);
        long id;
        long lsn;
        checkpointLock.writeLock().lock();
        try {
            checkWritable();
            id = archive.nextId();
            long now = System.currentTimeMillis();
            lsn = wal.append(RecordTypes.SNAPSHOT, LogicalRecords.encodeSnapshot(id, rank, now));
            archive.declare(id, rank, now, lsn);
            changes.snapshot(lsn, id, rank);
            if (subscriber != null) changes.add(subscriber);
        } finally {
            checkpointLock.writeLock().unlock();
        }
        wal.commit(lsn);
        return id;
    }

    /** Raises the rank of a live snapshot, logged like a write. */
    void rank(long id, int rank) {
        checkOpen();
        checkNotReadOnly();
        int levels = config.retention().levelCount();
        if (rank < 1 || rank > levels) throw new IllegalArgumentException("rank must be in [1, " + levels + "] (the retention policy's levels), was " + rank);
        long lsn;
        checkpointLock.writeLock().lock();
        try {
            checkWritable();
            SnapshotRecord r = liveSnapshot(id);
            if (rank < r.rank()) throw new IllegalArgumentException("snapshot " + id + " has rank " + r.rank() + "; a rank can only be raised, not to " + rank);
            lsn = wal.append(RecordTypes.RANK, LogicalRecords.encodeRank(id, rank));
            archive.rank(id, rank, lsn);
            changes.rank(lsn, id, rank);
        } finally {
            checkpointLock.writeLock().unlock();
        }
        wal.commit(lsn);
    }

    SnapshotView asOf(long id) {
        checkOpen();
        AsOfPages pages = AsOfPages.open(archive, memory, liveSnapshot(id));
        if (pages == null) liveSnapshot(id); // dropped in between: says so
        return new SnapshotViewImpl(this, pages);
    }

    /** The live snapshot {@code id}, or the exception saying whether it was never declared or dropped (when, why). */
    private SnapshotRecord liveSnapshot(long id) {
        SnapshotRecord r = archive.find(id);
        if (r != null) return r;
        DroppedSnapshot d = archive.dropped(id);
        if (d != null) throw new SnapshotNotFoundException("snapshot " + id + " was dropped by the retention policy at "
                + java.time.Instant.ofEpochMilli(d.droppedMillis()) + ": " + d.why());
        throw new SnapshotNotFoundException("snapshot " + id + " was never declared (latest is " + archive.latest() + ")");
    }

    // ---------------------------------------------------------------- reads

    /** Batches of a partition's current state, each copied under its read lock. */
    PartitionCursor.BatchSource scanSource(PartitionHandle h) {
        return (from, inclusive, to, max) -> {
            checkOpen();
            h.lock.readLock().lock();
            try {
                return h.tree.scan(from, inclusive, to, max);
            } finally {
                h.lock.readLock().unlock();
            }
        };
    }

    byte[] get(PartitionHandle h, byte[] key) {
        checkOpen();
        h.lock.readLock().lock();
        try {
            reads.increment();
            return h.tree.get(key);
        } finally {
            h.lock.readLock().unlock();
        }
    }

    long size(PartitionHandle h) {
        checkOpen();
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

    /** Fails a change of a read-only store before anything happens. */
    void checkNotReadOnly() {
        if (readOnly) throw new ReadOnlyStoreException("store " + config.path() + " was opened read-only; writes, snapshots, ranks and checkpoints need Varve.open");
    }

    private void checkWritable() {
        checkOpen();
        checkNotReadOnly();
        Throwable f = failure;
        if (f == null) f = checkpointer.failure();
        if (f == null) f = wal.failure();
        if (f != null) throw new StorageException("the store failed earlier (" + f + ") and refuses writes; reopen it to recover", null, f);
    }

    boolean isClosed() {
        return closed;
    }

    /** Clean shutdown: no write in flight, a final checkpoint, files closed. */
    void close() {
        if (closed) return;
        checkpointLock.writeLock().lock();
        try {
            closed = true;
        } finally {
            checkpointLock.writeLock().unlock();
        }
        try {
            checkpointer.stop();
            if (!readOnly && failure == null && checkpointer.failure() == null && wal.failure() == null) checkpointer.checkpoint("shutdown");
        } finally {
            // every resource is released even when one fails to close (a full disk refusing the archive's last writes)
            Closeables.closeAll(checkpointer, archive, wal, memory, store, () -> release(dirLock), () -> release(archiveDirLock));
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
        for (Runnable r : new Runnable[]{checkpointer::close, archive::close, memory::close, store::close, () -> release(dirLock),
                () -> release(archiveDirLock)}) {
            try {
                r.run();
            } catch (RuntimeException ignored) {
                // a dead process releases what it held without flushing anything
            }
        }
    }
}
