package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.tree.BPlusTree;

import dev.varve.snapshot.DroppedSnapshot;
import dev.varve.snapshot.SnapshotRecord;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * An open Varve store: the public facade. {@link #open} recovers if the last run crashed.
 *
 * <pre>{@code
 * try (Varve store = Varve.open(VarveConfig.builder().path(dir).build())) {
 *     Table t = store.table("accounts");
 *     t.put(key, value);
 *     store.write(b -> b.put("accounts", k, v).remove("orders", k2));
 * }
 * }</pre>
 * Thread-safe. A write returns once it is as durable as {@code walSyncMode} promises; {@link #close()} writes every
 * dirty page and fsyncs, so a reopened store holds everything.
 *
 * <p>While open, the store is registered in the platform MBean server as {@code dev.varve:type=Store,name="<name>"}
 * ({@link VarveStoreMXBean}; the name is {@link VarveConfig#name()}), and its background threads' names end in
 * {@code [<name>]}.
 */
public final class Varve implements AutoCloseable {
    /** Largest value, bytes. */
    public static final int MAX_VALUE_BYTES = BPlusTree.MAX_VALUE_BYTES;

    /**
     * A subdirectory of the store directory that marks an unfinished transfer (a backup being received into it, or a
     * store the {@code varve} tool's load, backup or salvage is building): while it exists, {@link #open} and
     * {@link #openReadOnly} refuse the directory, so a cut transfer never passes for a store.
     */
    public static final String INCOMING_DIR = ".incoming";

    private final Engine engine;
    private final EngineMetrics metrics;
    private final StoreMXBeanImpl mbean;

    private Varve(Engine engine) {
        this.engine = engine;
        this.metrics = new EngineMetrics(engine);
        try {
            this.mbean = StoreMXBeanImpl.register(engine, metrics);
        } catch (RuntimeException e) {
            engine.close();
            throw e;
        }
    }

    /**
     * Opens (creating or recovering) the store described by {@code config}. Nothing on disk is changed until the
     * store is found sound; damage is a {@link dev.varve.core.io.CorruptionException} naming the file and offset.
     *
     * @param options what the operator accepts beyond the default, e.g. {@link OpenOption#TRUNCATE_DAMAGED_WAL}
     */
    public static Varve open(VarveConfig config, OpenOption... options) {
        return open(config, FileIOFactory.standard(), options);
    }

    /** Opens the store with every file access going through {@code io} (fault-injection tests, tools). */
    public static Varve open(VarveConfig config, FileIOFactory io, OpenOption... options) {
        return open(config, io, Agents.dedicated(), options);
    }

    /**
     * The test seam: opens the store with its background agents (checkpointer, archiver, WAL flusher) run by
     * {@code agents}; with {@link Agents#invoked()} nothing runs until the test steps them.
     */
    static Varve open(VarveConfig config, FileIOFactory io, Agents agents, OpenOption... options) {
        if (config == null) throw new IllegalArgumentException("config must not be null");
        if (io == null) throw new IllegalArgumentException("io must not be null");
        if (agents == null) throw new IllegalArgumentException("agents must not be null");
        if (options == null) throw new IllegalArgumentException("options must not be null");
        Set<OpenOption> set = EnumSet.noneOf(OpenOption.class);
        for (OpenOption o : options) {
            if (o == null) throw new IllegalArgumentException("an open option must not be null");
            set.add(o);
        }
        refuseUnfinishedTransfer(config.path());
        return new Varve(Engine.open(config, io, false, set.contains(OpenOption.TRUNCATE_DAMAGED_WAL), agents));
    }

    /**
     * A directory a backup is still being received into is not a store yet: neither open nor a tool may take it for
     * one. Checked before anything else about the directory, as a cut transfer leaves no store files at its top.
     */
    static void refuseUnfinishedTransfer(Path dir) {
        if (Files.exists(dir.resolve(INCOMING_DIR)))
            throw new IllegalStateException("the directory " + dir + " holds an unfinished transfer (" + INCOMING_DIR
                    + " is present): it is not a store yet; run the same backup, load or salvage again to complete it, or delete the "
                    + "directory");
    }

    /**
     * Opens an existing store for reading only; not one byte of its directory changes (every file is opened for
     * reading, no lock file is created, nothing is flushed at close). A store whose last run crashed is recovered in
     * memory: it reads exactly as {@link #open} would leave it, while its files stay as the crash left them, so the
     * next {@code open} recovers it for real. The open takes a shared lock on an existing {@code varve.lock}: it
     * fails while another process has the store open for writing, and keeps writers out until closed.
     *
     * <p>Writes, {@link #snapshotNow}, {@link #rank} and {@link #checkpoint} throw {@link ReadOnlyStoreException};
     * asking for a table that does not exist is an {@link IllegalArgumentException} (a read-only store creates none).
     * The configuration must match the store's on-disk layout as for {@code open} ({@link StoreInspector#detectConfig}
     * reads it from the files). Memory: what recovery changes is held on the
     * heap, and so is each WAL segment it reads.
     *
     * @throws IllegalArgumentException if the directory holds no store
     * @throws dev.varve.core.io.StorageException if this user may not read it, or it does not open
     * @throws IllegalStateException    if it holds an unfinished transfer, or another process has it open for writing
     */
    public static Varve openReadOnly(VarveConfig config) {
        return openReadOnly(config, new MemoryOverlayIO());
    }

    /** {@link #openReadOnly(VarveConfig)} over {@code overlay}, which then tells what its recovery changed. */
    static Varve openReadOnly(VarveConfig config, MemoryOverlayIO overlay) {
        if (config == null) throw new IllegalArgumentException("config must not be null");
        Path dir = config.path();
        refuseUnfinishedTransfer(dir);
        StoreInspector.requireStore(dir, "");
        return new Varve(Engine.open(config, overlay, true, false));
    }

    /** True for a store opened with {@link #openReadOnly}. */
    public boolean isReadOnly() {
        return engine.readOnly;
    }

    /**
     * The table {@code name}: an existing table as it was created, else a new hash-placed table with the configured
     * partition count.
     */
    public Table table(String name) {
        return engine.table(name);
    }

    /**
     * The table {@code name}, created with {@code options} on first use (placement and partition count are kept in
     * the catalog and survive restarts).
     *
     * @throws IllegalArgumentException if the name or options are invalid, or the table exists with other options
     *         (another placement or partition count)
     */
    public Table table(String name, TableOptions options) {
        return engine.table(name, options);
    }

    /** The names of the store's tables, in unsigned UTF-8 byte order (as {@link SnapshotView#tables()} lists them). */
    public List<String> tables() {
        return engine.tableNames();
    }

    /** Applies the batch's operations atomically across keys, tables and partitions: all of them or none. */
    public void write(Consumer<WriteBatch> batch) {
        checkBatchArgument(batch);
        collect(batch).write(0, (ops, created) -> {
            engine.writePath.write(ops, created);
            return null;
        });
    }

    /** Applies the batch and declares a rank-1 snapshot right after it; see {@link #writeAndSnapshot(Consumer, int)}. */
    public long writeAndSnapshot(Consumer<WriteBatch> batch) {
        return writeAndSnapshot(batch, 1);
    }

    /**
     * Applies the batch atomically, as {@link #write} does, and declares a snapshot of rank {@code rank} right after
     * it, with no other write in between: the snapshot holds the batch and every write that completed before the
     * call, and nothing that starts after it returns. Returns the snapshot's id once the batch and the declaration
     * are as durable as {@code walSyncMode} promises — both reach the disk with one commit, so under
     * {@code FSYNC} the pair costs one fsync where {@code write} then {@link #snapshotNow(int)} costs two. A batch
     * that fails declares no snapshot; an empty batch just declares one.
     *
     * @throws IllegalArgumentException if the batch is null or invalid (as for {@code write}), or the rank is
     *         outside the retention policy's levels; nothing is written then
     */
    public long writeAndSnapshot(Consumer<WriteBatch> batch, int rank) {
        checkBatchArgument(batch);
        engine.snapshots.checkRank(rank);
        return collect(batch).write(LogicalRecords.SNAPSHOT_RANK_BYTES, (ops, created) -> engine.writePath.writeAndSnapshot(ops, created, rank));
    }

    /** What a batch taking call checks before the caller's batch runs. */
    private void checkBatchArgument(Consumer<WriteBatch> batch) {
        engine.checkOpen(); // a closed store says so whatever else is wrong with the call, as a put does
        if (batch == null) throw new IllegalArgumentException("batch must not be null");
        engine.checkNotReadOnly();
    }

    /** Runs the caller's batch, whose operations are checked as it adds them; {@link BatchBuilder#write} checks the whole. */
    private BatchBuilder collect(Consumer<WriteBatch> batch) {
        BatchBuilder b = new BatchBuilder(engine);
        batch.accept(b);
        return b;
    }

    /**
     * Makes every write, snapshot declaration and rank change that returned before this call durable against a power
     * loss, whatever {@code walSyncMode} promised each of them (under {@code FSYNC} they already are): one force of the
     * WAL, shared with a group commit running at the time. For a {@code LOG_ONLY} or {@code BACKGROUND} store that
     * needs a durable point now and then, such as before it tells another system that a write or a snapshot exists.
     *
     * @throws ReadOnlyStoreException on a store opened read-only
     * @throws dev.varve.core.io.StorageException if the store failed earlier or the force fails (writes are then
     *                                            refused, as after any WAL failure)
     */
    public void sync() {
        engine.checkWritable();
        engine.wal.force();
    }

    /**
     * Starts a checkpoint (after any running one); completes when it is durable. With nothing for it to do (no page
     * dirty, and the WAL not grown past the last checkpoint's mark but by that checkpoint's own witness record) none
     * runs, and the future completes with the last one's figures ({@link CheckpointStats#NONE} when none ran since
     * open): what the store holds is durable already.
     */
    public CompletableFuture<CheckpointStats> checkpoint() {
        engine.checkOpen();
        engine.checkNotReadOnly();
        return engine.checkpointer.request("explicit").thenApply(CheckpointStats::of);
    }

    /** Live counters. */
    public VarveMetrics metrics() {
        return metrics;
    }

    /** Every archived mapping a live snapshot reaches that points at reclaimed data (I8; empty when it holds). For tests. */
    List<String> danglingArchiveMappings() {
        return engine.archive.reachableButReclaimed();
    }

    /** What recovery did when this store was opened. */
    public RecoveryReport recoveryReport() {
        return RecoveryReport.of(engine.recoveryReport());
    }

    /** The configuration the store was opened with. */
    public VarveConfig config() {
        return engine.config;
    }

    /** Largest key, bytes: {@code pageSize / 4} (1024 at the default 4 KiB pages). */
    public int maxKeyBytes() {
        return engine.maxKeyBytes;
    }

    /**
     * Whether the data region takes one batch of {@code operations} operations carrying {@code keyAndValueBytes} bytes
     * of keys and values: {@link #write} refuses, before it logs anything, a batch that may touch more than half the
     * region (16 pages an operation, plus the overflow pages of its bytes). For a writer that sizes its batches to the
     * store, as the tool's load and backup do; the batch's WAL record must also fit a segment ({@code walSegmentSize}).
     *
     * @throws IllegalArgumentException if {@code operations} is below 1 or {@code keyAndValueBytes} is negative
     */
    public boolean batchFitsDataRegion(int operations, long keyAndValueBytes) {
        if (operations < 1) throw new IllegalArgumentException("operations must be at least 1, was " + operations);
        if (keyAndValueBytes < 0) throw new IllegalArgumentException("keyAndValueBytes must not be negative, was " + keyAndValueBytes);
        return engine.limits.fitsDataRegion(keyAndValueBytes, operations);
    }

    /** Declares a rank-1 snapshot; see {@link #snapshotNow(int)}. */
    public long snapshotNow() {
        return snapshotNow(1);
    }

    /**
     * Declares a snapshot of rank {@code rank} (1 to the retention policy's level count) and returns its id. The
     * snapshot holds exactly the writes that completed before the call and none that start after it returns; its
     * declaration is as durable as {@code walSyncMode} makes writes.
     */
    public long snapshotNow(int rank) {
        return engine.snapshots.snapshotNow(rank);
    }

    /**
     * Declares a snapshot of rank {@code rank} and, in the same instant, subscribes {@code listener} to every change
     * committed after it (see {@link ChangeListener} for when and how it is called): a consistent image
     * ({@code asOf(feed.snapshot())}) plus the feed reproduce the store as it goes on. Used by snapshot shipping's
     * follow mode. Close the feed to stop.
     */
    public ChangeFeed follow(int rank, ChangeListener listener) {
        engine.checkOpen(); // closed before a null listener, as every other call of a closed store
        if (listener == null) throw new IllegalArgumentException("listener must not be null");
        return engine.snapshots.follow(rank, listener);
    }

    /**
     * Raises the rank of a live snapshot after its declaration (lazy ranking), so the retention policy keeps it as
     * long as its new rank says. Logged and as durable as a write; the current rank is accepted and changes nothing.
     *
     * @throws SnapshotNotFoundException if the snapshot was never declared or was already dropped
     * @throws IllegalArgumentException if the rank is outside the policy's levels or lower than the current one
     */
    public void rank(long snapshot, int rank) {
        engine.snapshots.rank(snapshot, rank);
    }

    /**
     * A read-only view of the store as of snapshot {@code snapshot}: the same {@link Table} and {@link Cursor} API,
     * running the same B+tree code over past page versions, while writers and checkpoints carry on. Close it.
     *
     * @throws SnapshotNotFoundException if the id was never declared, or the retention policy dropped it (the
     *         message says when and by which rules)
     */
    public SnapshotView asOf(long snapshot) {
        return engine.snapshots.asOf(snapshot);
    }

    /** The live snapshots, oldest first, with rank, declaration time and archive bytes. */
    public List<SnapshotInfo> snapshots() {
        engine.checkOpen();
        List<SnapshotInfo> out = new ArrayList<>();
        for (SnapshotRecord r : engine.archive.snapshots())
            out.add(new SnapshotInfo(r.id(), r.rank(), Instant.ofEpochMilli(r.declaredMillis()), engine.archive.archiveBytes(r.id())));
        return out;
    }

    /**
     * The snapshots the retention policy let go with the highest ids, highest first (drops happen out of id order),
     * at most {@code max} of them, each with when and why it was dropped.
     */
    public List<DroppedSnapshotInfo> droppedSnapshots(int max) {
        engine.checkOpen(); // closed before a bad max, as every other call of a closed store
        if (max < 0) throw new IllegalArgumentException("max must be >= 0, was " + max);
        List<DroppedSnapshotInfo> out = new ArrayList<>();
        for (DroppedSnapshot d : engine.archive.latestDrops(max)) out.add(new DroppedSnapshotInfo(d.id(), Instant.ofEpochMilli(d.droppedMillis()), d.why()));
        return out;
    }

    /** Writes every dirty page, fsyncs, and releases the store. Idempotent. */
    @Override
    public void close() {
        mbean.unregister();
        engine.close();
    }

    /** The wired store, for the inspection classes of this package. */
    Engine engine() {
        return engine;
    }


    /** Simulates a process crash (tests): threads stop, nothing is flushed, the directory lock is released. */
    void halt() {
        mbean.unregister();
        engine.halt();
    }
}
