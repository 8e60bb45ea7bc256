package dev.varve.benchmarks;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;

import java.nio.file.Path;

/**
 * The child JVM of {@link RecoveryTimeJob}: runs the {@link UniquePutLoad} on a store whose region holds twice the
 * target of dirty pages and whose checkpoints are a day apart, prints {@code READY <acknowledged puts> <dirty bytes>
 * <wal bytes>} once {@code dirtyMiB} MiB of pages are dirty, and keeps writing until it is killed.
 *
 * <p>Arguments: {@code DIR MODE COMPRESSION SYNC DIRTY_MIB}.
 */
public final class DirtyPageWriter {
    static final String READY = "READY";
    static final long SEED = 7;
    static final String TABLE = "load";

    private DirtyPageWriter() {
    }

    /** The store configuration shared by the child and the parent that recovers it. */
    static VarveConfig config(Path dir, RecoveryMode mode, RecoveryCompression compression, WalSyncMode sync, int dirtyMiB) {
        return VarveConfig.builder().path(dir).recoveryMode(mode).recoveryCompression(compression).walSyncMode(sync)
                .dataRegionSize(regionBytes(dirtyMiB))
                .checkpointFrequency(ConfigLimits.CHECKPOINT_FREQUENCY_MAX)
                .checkpointWalVolume(ConfigLimits.CHECKPOINT_WAL_VOLUME_MAX)
                .build();
    }

    /** Twice the target plus 64 MiB: the dirty-ratio trigger (75 % by default) stays out of reach. */
    static long regionBytes(int dirtyMiB) {
        return (2L * dirtyMiB + 64) << 20;
    }

    public static void main(String[] args) {
        if (args.length != 5) {
            System.err.println("usage: DirtyPageWriter DIR MODE COMPRESSION SYNC DIRTY_MIB");
            System.exit(2);
        }
        int dirtyMiB = Integer.parseInt(args[4]);
        VarveConfig cfg = config(Path.of(args[0]), RecoveryMode.valueOf(args[1]), RecoveryCompression.valueOf(args[2]),
                WalSyncMode.valueOf(args[3]), dirtyMiB);
        long target = (long) dirtyMiB << 20;
        Varve store = Varve.open(cfg); // never closed: the parent kills this JVM
        Table table = store.table(TABLE);
        VarveMetrics m = store.metrics();
        UniquePutLoad load = new UniquePutLoad(0, SEED);
        boolean ready = false;
        while (true) {
            for (int i = 0; i < 1024; i++) load.putNext(table);
            if (!ready && m.dirtyPages() * cfg.pageSize() >= target) {
                // every put before this line has returned: with FSYNC or LOG_ONLY it survives the kill
                System.out.println(READY + " " + load.nextId() + " " + m.dirtyPages() * cfg.pageSize() + " " + m.walBytesWritten());
                System.out.flush();
                ready = true;
            }
        }
    }
}
