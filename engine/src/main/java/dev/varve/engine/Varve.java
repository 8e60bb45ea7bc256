package dev.varve.engine;

import dev.varve.checkpoint.CheckpointStats;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.tree.BPlusTree;
import dev.varve.recovery.RecoveryReport;

import java.util.List;
import java.util.Objects;
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
 */
public final class Varve implements AutoCloseable {
    /** Largest value, bytes. */
    public static final int MAX_VALUE_BYTES = BPlusTree.MAX_VALUE_BYTES;

    private final Engine engine;
    private final EngineMetrics metrics;

    private Varve(Engine engine) {
        this.engine = engine;
        this.metrics = new EngineMetrics(engine);
    }

    /** Opens (creating or recovering) the store described by {@code config}. */
    public static Varve open(VarveConfig config) {
        return open(config, FileIOFactory.standard());
    }

    /** Opens the store with every file access going through {@code io} (fault-injection tests, tools). */
    public static Varve open(VarveConfig config, FileIOFactory io) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(io, "io");
        return new Varve(Engine.open(config, io));
    }

    /** The table {@code name}, created on first use with the configured partition count. */
    public Table table(String name) {
        return engine.table(name);
    }

    /** Applies the batch's operations atomically across keys, tables and partitions: all of them or none. */
    public void write(Consumer<WriteBatch> batch) {
        Objects.requireNonNull(batch, "batch");
        engine.checkOpen();
        BatchBuilder b = new BatchBuilder(engine);
        batch.accept(b);
        engine.write(b.ops());
    }

    /** Starts a checkpoint (after any running one); completes when it is durable. */
    public CompletableFuture<CheckpointStats> checkpoint() {
        engine.checkOpen();
        return engine.checkpointer.request("explicit");
    }

    /** Live counters. */
    public VarveMetrics metrics() {
        return metrics;
    }

    /** What recovery did when this store was opened. */
    public RecoveryReport recoveryReport() {
        return engine.recoveryReport();
    }

    /** The configuration the store was opened with. */
    public VarveConfig config() {
        return engine.config;
    }

    /** Largest key, bytes: {@code pageSize / 4} (1024 at the default 4 KiB pages). */
    public int maxKeyBytes() {
        return engine.maxKeyBytes;
    }

    /** Declares a rank-1 snapshot. */
    public long snapshotNow() {
        return snapshotNow(1);
    }

    /** Declares a snapshot of rank {@code rank}. */
    public long snapshotNow(int rank) {
        engine.checkOpen();
        throw new UnsupportedOperationException("split snapshots are not part of this build of Varve");
    }

    /** Raises the rank of a declared snapshot (lazy ranking). */
    public void rank(long snapshot, int rank) {
        engine.checkOpen();
        throw new UnsupportedOperationException("ranked retention is not part of this build of Varve");
    }

    /** A read-only view as of a snapshot. */
    public SnapshotView asOf(long snapshot) {
        engine.checkOpen();
        throw new SnapshotNotFoundException("snapshot " + snapshot + " was never declared (this build of Varve declares no snapshots)");
    }

    /** The live snapshots. */
    public List<SnapshotInfo> snapshots() {
        engine.checkOpen();
        return List.of();
    }

    /** Writes every dirty page, fsyncs, and releases the store. Idempotent. */
    @Override
    public void close() {
        engine.close();
    }

    /** Simulates a process crash (tests): threads stop, nothing is flushed, the directory lock is released. */
    void halt() {
        engine.halt();
    }
}
