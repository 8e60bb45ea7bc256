package dev.varve.benchmarks;

import dev.varve.engine.CheckpointStats;
import dev.varve.config.VarveConfig;
import dev.varve.engine.Partition;
import dev.varve.engine.Table;
import dev.varve.engine.TableOptions;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;

import java.nio.file.Path;
import java.time.Duration;

/** Varve through its public API only. */
final class VarveTarget implements PeerTarget {
    static final String TABLE = "load";

    private final Varve store;
    private final Table table;
    private final VarveMetrics metrics;
    private final VarveConfig cfg;
    /** Writer i's partition when each writer has its own; null: keys are placed by hash. */
    private final Partition[] own;

    /**
     * @param ownPartitions true: a caller-placed table, and writer {@code i} puts into partition {@code i % partitions},
     *                      so writers never share a partition
     */
    VarveTarget(CompareSetup setup, CompareSettings s, Path dir, boolean ownPartitions) {
        cfg = setup.varve.applyTo(VarveConfig.builder().path(dir))
                .pageSize(s.pageSize())
                .dataRegionSize(s.regionBytes())
                .partitions(s.partitions())
                .walSyncMode(s.sync())
                .checkpointFrequency(Duration.ofMillis(s.checkpointMillis()))
                .checkpointThreads(CompareSettings.CHECKPOINT_THREADS)
                .checkpointBufferSize(s.checkpointBufferBytes())
                .build();
        store = Varve.open(cfg);
        table = ownPartitions ? store.table(TABLE, TableOptions.callerPlaced(s.partitions())) : store.table(TABLE);
        metrics = store.metrics();
        if (ownPartitions) {
            own = new Partition[s.partitions()];
            for (int p = 0; p < own.length; p++) own[p] = table.partition(p);
        } else {
            own = null;
        }
    }

    @Override
    public void put(long id, byte[] value) {
        table.put(Keys.of(id), value);
    }

    @Override
    public void put(int writer, long id, byte[] value) {
        if (own == null) put(id, value);
        else own[writer % own.length].put(Keys.of(id), value);
    }

    @Override
    public void putBatch(long[] ids, byte[][] values, int n) {
        store.write(b -> {
            for (int i = 0; i < n; i++) b.put(TABLE, Keys.of(ids[i]), values[i]);
        });
    }

    @Override
    public byte[] get(long id) {
        return table.get(Keys.of(id));
    }

    @Override
    public void settle() {
        store.checkpoint().join();
    }

    @Override
    public Gauges gauges() {
        return new Gauges(metrics.walBytesWritten(), metrics.throttledNanos(), metrics.checkpointBufferUsedPages(), metrics.dirtyPages());
    }

    @Override
    public Checkpoint lastCheckpoint() {
        CheckpointStats c = metrics.lastCheckpoint();
        if (c.id() == 0) return null;
        return new Checkpoint(c.id(), c.pages(), c.recoveryDataBytes(), c.recoveryDataNanos(), c.pageWriteNanos(), c.fsyncNanos(),
                c.lockHoldNanos(), c.totalNanos());
    }

    @Override
    public String describe() {
        return String.format("Varve: recoveryMode=%s, recoveryCompression=%s, walSyncMode=%s, pageSize=%d, dataRegionSize=%d MiB, "
                        + "checkpointBufferSize=%d MiB, checkpointFrequency=%d ms, checkpointThreads=%d, partitions=%d, "
                        + "checkpointDirtyRatio=%.2f, walSegmentSize=%d MiB; key = 8-byte big-endian id; a batch is one atomic store.write%s",
                cfg.recoveryMode(), cfg.recoveryCompression(), cfg.walSyncMode(), cfg.pageSize(),
                cfg.dataRegionSize() >> 20, cfg.checkpointBufferSize() >> 20, cfg.checkpointFrequency().toMillis(),
                cfg.checkpointThreads(), cfg.partitions(), cfg.checkpointDirtyRatio(), cfg.walSegmentSize() >> 20,
                own == null ? "" : "; writer i puts into partition i (a caller-placed table)");
    }

    @Override
    public void close() {
        store.close();
    }
}
