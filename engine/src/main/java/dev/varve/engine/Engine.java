package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarker;
import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.checkpoint.Checkpointer;
import dev.varve.checkpoint.PageFileGenerations;
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
import dev.varve.core.util.RealPaths;
import dev.varve.core.util.StoreThreads;
import dev.varve.core.wal.Wal;
import dev.varve.core.wal.WalOpenScan;
import dev.varve.core.wal.WalSegmentDescriptor;
import dev.varve.recovery.Recovery;
import dev.varve.recovery.RecoveryReport;
import dev.varve.recovery.RecoveryStart;
import dev.varve.snapshot.ArchiveSettings;
import dev.varve.snapshot.RetentionFile;
import dev.varve.snapshot.SnapshotArchive;
import dev.varve.snapshot.WalDurability;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReadWriteLock;

/**
 * The wired store: page store, page memory, WAL, checkpointer, catalog and partitions, tied together by the write
 * path ({@link WritePath}). A write appends its WAL record and applies its page changes inside the partition's
 * critical section, holding the checkpoint read lock, so the WAL order is the order pages changed in (I6) and a
 * checkpoint mark is a clean cut. Replay runs the same apply code.
 *
 * <p>Any failure after a record was appended (an IO error, a corrupt page) leaves page memory behind the WAL; the
 * engine then refuses every further write, and reads of the live state, naming the cause: reopening recovers from the
 * WAL.
 */
final class Engine {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class);
    final VarveConfig config;
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
    private final ReadWriteLock checkpointLock = new CheckpointLock();
    final Snapshots snapshots = new Snapshots(this, checkpointLock);
    final TableRegistry tables = new TableRegistry(this);
    /** Every change of the store's pages: head-room, the checkpoint lock, the partition locks, the WAL, the commit. */
    final WritePath writePath;
    /** Null for a read-only open of a directory no writer ever locked. */
    private final StoreLock dirLock;
    /** The archive directory has its own lock: two stores must not share an archive, whatever their paths. */
    private final StoreLock archiveDirLock;
    /** Opened by {@link Varve#openReadOnly}: every change stays in memory, writes are refused. */
    final boolean readOnly;
    private RecoveryReport recovery;
    /** Threads that replayed partitions in parallel at open (0: the opening thread alone); tests read it. */
    int replayWorkers;
    private volatile boolean closed;
    /** Held for the whole of a close: a second caller waits for the first to finish, then finds it closed. */
    private final Object closing = new Object();

    /**
     * Refuses a WAL that holds a record type this build does not know (the segment's own seal aside): a newer release
     * wrote it, and recovery would restore and replay the pages without those records, then checkpoint the result.
     */
    private static void refuseUnknownRecordTypes(WalOpenScan scan, Path walDir) {
        for (int type = 0; type < WalSegmentDescriptor.SEAL_TYPE; type++) {
            if (scan.holds(type) && !RecordTypes.isKnown(type))
                throw new CorruptionException("the WAL holds records of type " + type + ", which this build does not know: they were "
                        + "written by a newer release; open the store with that release", walDir, 0);
        }
    }

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
            if (!readOnly) WritableCheck.refuseUnwritable(config); // before anything is written: not half a recovery
            Path checkpointsDir = config.path().resolve("checkpoints");
            Path pagesDir = config.path().resolve("pages");
            if (!io.exists(checkpointsDir)) refuseOrphanPages(io, checkpointsDir, pagesDir); // before the markers make it
            CheckpointMarkers markers = new CheckpointMarkers(io, checkpointsDir);
            RecoveryStart start = RecoveryStart.decide(markers, config.pageSize());
            Path walDir = config.path().resolve("wal");
            long neededFrom = start.walScanFrom(config.walSegmentSize());
            WalOpenScan walScan;
            // what recovery will need of the data region, learnt from the records as the scan checks them
            long replayFrom = start.latest() == null ? 0 : start.latest().markLsn();
            ReplayHeadroom replayHeadroom = new ReplayHeadroom(config, replayFrom);
            RaisesToReplay raises = new RaisesToReplay(replayFrom); // the snapshots replay keeps until their raises
            // whose files these are, from the markers alone: the WAL's segments are checked against it, then the page files
            PageFileGenerations generations = PageFileGenerations.load(markers, start.latest());
            try {
                walScan = WalOpenScan.run(io, walDir, config.walSegmentSize(), config.walSyncMode(), neededFrom, truncateDamagedWal,
                        (lsn, type, payload) -> {
                            replayHeadroom.visit(lsn, type, payload);
                            raises.visit(lsn, type, payload);
                        }, generations.durableId());
            } catch (CorruptionException e) {
                throw start.explain(e, markers);
            }
            refuseUnknownRecordTypes(walScan, walDir);
            start.checkWalWitness(walScan.lastOf(RecordTypes.CHECKPOINT_STARTED), markers);
            // after the markers' and the WAL's own checks, which name a lost marker when they can
            if (start.latest() == null) refuseOrphanPages(io, checkpointsDir, pagesDir);
            // before the archive's lock, which creates its directory: a store opened with another archivePath than its
            // archive's, or a new store given another's, is refused as such, with nothing created or cut
            if (start.latest() != null) SnapshotArchive.refuseMissing(io, config.archivePath(), config.path());
            else SnapshotArchive.refuseForeign(io, config.archivePath(), config.skippyNodeEntries(), config.path(), walScan.endLsn());
            StoreLock archiveLock = readOnly ? StoreLock.acquireShared(config.archivePath(), "archive")
                    : StoreLock.acquire(config.archivePath(), "archive");
            this.archiveDirLock = archiveLock;
            opened.push(() -> release(archiveLock));
            this.archive = new SnapshotArchive(io, ArchiveSettings.builder(config.archivePath(), config.retention()).pageSize(config.pageSize())
                    .skippyLevels(config.skippyLevels()).skippyNodeEntries(config.skippyNodeEntries()).captureBufferBytes(config.captureBufferSize())
                    .segmentBytes(config.archiveSegmentSize()).pageWindow(config.snapshotPageWindow()).diffChain(config.snapshotDiffChain())
                    .storeId(generations.durableId()).build());
            opened.push(archive);
            archive.useAgents(agents);
            CheckpointMarker recovered = start.latest();
            archive.check(recovered == null ? neededFrom : recovered.markLsn(), recovered == null);
            // every store makes it at its first open, before any checkpoint: refused as lost before PageStore makes it anew
            if (recovered != null && !io.exists(pagesDir))
                throw new CorruptionException("the store has completed checkpoints but its pages directory is missing", pagesDir, 0);
            this.store = new PageStore(io, pagesDir, config.pageSize(), generations.durableId());
            opened.push(store);
            // a page file rolled back to an earlier backup, or another store's, is whole and would be served as data
            generations.refuseUnsound(store);
            this.memory = new PageMemory(store, config.dataRegionSize(), config.checkpointBufferSize());
            opened.push(memory);
            replayHeadroom.refuseSmaller(memory, config); // a region the replay cannot fit in, before any write
            // a store of another tree format (its catalog's tells) is refused before recovery writes to it
            BPlusTree.refuseOtherFormat(store, Catalog.FILE_ID);
            if (!readOnly) RetentionFile.refuseUnwritable(io, config.archivePath()); // written after recovery: refused before it
            // the first write: the markers, the WAL from where recovery reads and the archive were found sound (a page
            // is checked when it is read: damage in one that replay reads is found after recovery's first steps)
            this.wal = Wal.open(walScan, config.walFlushFrequency(), agents, readOnly);
            opened.push(wal);
            wal.tailCut().ifPresent(cut -> LOG.warn(readOnly ? "{} (in memory only: opened read-only, the files are unchanged)" : "{}", cut));
            store.tidy();
            this.checkpointer = new Checkpointer(config, memory, wal, markers, checkpointLock, PageLayout::unusedRange, agents);
            opened.push(checkpointer);
            checkpointer.useGenerations(generations);
            this.writePath = new WritePath(this, checkpointLock, checkpointer.throttle());
            writePath.resumeLargestValue(start.latest()); // replay raises it further, record by record
            checkpointer.recordLargestValue(writePath::largestValue);
            // first, so that a lost lock stops the checkpoint before the archive's files are flushed too
            if (!readOnly) checkpointer.addListener(StoreLock.checkedAtCheckpoints(dirLock, archiveLock));
            archive.attach(memory); // after the physical-WAL hook, whose deltas must see SavedAfter change
            archive.wal(walDurability(wal)); // no drop is written before the declaration that caused it is durable
            checkpointer.addListener(archive);
            LogicalReplayer replayer = new LogicalReplayer(this, agents.parallel(), raises.ids());
            memory.recovering(true);
            this.recovery = new Recovery(memory, wal, markers, checkpointer, start).run(replayer, !readOnly);
            memory.recovering(false);
            this.replayWorkers = replayer.workersStarted();
            if (replayer.owedSnapshotRank() > 0) snapshots.declareOwed(replayer.owedSnapshotRank());
            archive.replayed(); // the policy at today's clock, on the ranks replay gave: drops what it no longer keeps
            if (!readOnly) { // a read-only store never changes after its in-memory recovery
                RetentionFile.record(io, config.archivePath(), config.retention()); // for those that open it without its configuration
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
        refuseLinkedOverlap(config);
        if (!readOnly) {
            NestedStoreCheck.refuse(config);
            refuseBeforeCreating(config, io);
            try {
                io.createDirectories(config.path());
            } catch (IOException e) {
                throw StoreLock.cannotCreate("store", config.path(), e);
            }
        }
        StoreThreads.Scope named = StoreThreads.opening(config.name());
        try {
            return new Engine(config, io, readOnly, truncateDamagedWal, agents);
        } finally {
            named.close();
        }
    }

    /**
     * What a writable open can refuse before it creates the store's directory and lock file: a refused open changes
     * nothing, and once those exist a new store's refusal would leave them behind, for the next open to take as a store
     * it had made. The name is checked here (not only when the store's MXBean registers, after recovery ran and a new
     * store's files were made) unless this directory is already open in this JVM, which its lock then says. An archive
     * another store owns is refused here for a store directory that does not exist yet (its WAL ends at 0); for an
     * existing one the open refuses it once it has read the WAL, still before it writes. Buffers that cannot fit under
     * the JVM's limit on direct memory are refused here too ({@link DirectMemoryBudget}).
     */
    private static void refuseBeforeCreating(VarveConfig config, FileIOFactory io) {
        DirectMemoryBudget.refuseOverLimit(config);
        if (!StoreLock.heldInThisJvm(config.path())) StoreMXBeanImpl.checkNameFree(config.name());
        Path archive = config.archivePath();
        if (io.exists(archive) && !Files.isDirectory(archive))
            throw new IllegalArgumentException("archivePath " + archive + " is not a directory");
        if (Files.isSymbolicLink(archive) && !Files.exists(archive)) // before the store's directory is made for nothing
            throw StoreLock.cannotCreate("archive", archive, new java.nio.file.NoSuchFileException(archive.toString()));
        if (!io.exists(config.path())) SnapshotArchive.refuseForeign(io, archive, config.skippyNodeEntries(), config.path(), 0);
    }

    /**
     * The configuration refuses an archive that overlaps the store as the paths are written; a symbolic link can still
     * put it inside the store's {@code pages/} or {@code wal/}, make it the store directory, or hold the store. The
     * same check again on the paths the file system resolves, before anything is created or locked.
     */
    private static void refuseLinkedOverlap(VarveConfig config) {
        Path path = RealPaths.of(config.path());
        Path archive = RealPaths.of(config.archivePath());
        if (path.equals(config.path().toAbsolutePath().normalize()) && archive.equals(config.archivePath().toAbsolutePath().normalize()))
            return; // no link on the way: the configuration's own check saw these paths
        try {
            config.toBuilder().path(path).archivePath(archive).build();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("path " + config.path() + " and archivePath " + config.archivePath()
                    + " overlap once symbolic links are followed (" + e.getMessage() + "); give the archive a directory apart from the store's", e);
        }
    }

    /**
     * Pages reach their files only in checkpoints, each after its start marker, and the latest start marker always
     * stays: page files that hold pages while no checkpoint ever started mean the markers were lost (or the files are
     * another store's). Opened as a new store, it would show none of their data and then write over them.
     */
    private static void refuseOrphanPages(FileIOFactory io, Path checkpointsDir, Path pagesDir) {
        if (!io.exists(pagesDir)) return;
        try {
            for (Path p : io.list(pagesDir, "")) {
                if (!PageStore.isPageFileName(p.getFileName().toString())) continue; // an operator's copy is not the store's
                try (var f = io.open(p, false)) {
                    if (f.size() > 0)
                        throw new CorruptionException("the page file holds pages but no checkpoint start marker is in " + checkpointsDir
                                + (io.exists(checkpointsDir) ? "" : " (the directory is missing)") + ": the markers were lost, or the page files are another store's", p, 0);
                }
            }
        } catch (IOException e) {
            throw new StorageException("cannot read the page files", pagesDir, e);
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
        long settled = h.writesSettled(); // first without the lock: see PartitionHandle
        if (settled >= 0) {
            byte[] value = h.tree.getUnsettled(key);
            if (value != BPlusTree.UNSETTLED && h.noWritesSince(settled)) {
                reads.increment();
                return value;
            }
        }
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
        Throwable f = writePath.failure();
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

    /** The WAL as the archive waits for it: forced through a record (everything appended, a record is not forced alone). */
    private static WalDurability walDurability(Wal wal) {
        return new WalDurability() {
            @Override
            public long durableLsn() {
                return wal.durableLsn();
            }

            @Override
            public long position() {
                return wal.position();
            }

            @Override
            public void forceThrough(long lsn) {
                if (lsn >= wal.durableLsn()) wal.force();
            }
        };
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
