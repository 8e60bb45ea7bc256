package dev.varve.benchmarks;

import dev.varve.engine.CheckpointStats;
import dev.varve.config.VarveConfig;
import dev.varve.engine.Table;
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

    VarveTarget(CompareSetup setup, CompareSettings s, Path dir) {
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
        table = store.table(TABLE);
        metrics = store.metrics();
    }

    @Override
    public void put(long id, byte[] value) {
        table.put(Keys.of(id), value);
    }

    @Override
    public void putBatch(long[] ids, byte[][] values, int n) {
        store.write(b -> {
            for (int i = 0; i < n; i++) b.put(TABLE, Keys.of(ids[i]), values[i]);
        });
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
                        + "checkpointDirtyRatio=%.2f, walSegmentSize=%d MiB; key = 8-byte big-endian id; a batch is one atomic store.write",
                cfg.recoveryMode(), cfg.recoveryCompression(), cfg.walSyncMode(), cfg.pageSize(),
                cfg.dataRegionSize() >> 20, cfg.checkpointBufferSize() >> 20, cfg.checkpointFrequency().toMillis(),
                cfg.checkpointThreads(), cfg.partitions(), cfg.checkpointDirtyRatio(), cfg.walSegmentSize() >> 20);
    }

    @Override
    public void close() {
        store.close();
    }
}
