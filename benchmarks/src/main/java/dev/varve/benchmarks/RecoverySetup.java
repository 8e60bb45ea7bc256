package dev.varve.benchmarks;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;

/** The four crash-recovery configurations compared by {@link RecoveryModeBenchmark} and {@link RecoveryModeComparison}. */
public enum RecoverySetup {
    /** Page images (Snappy-compressed, the default compression) and deltas in the WAL; no recovery files. */
    WAL_PHYSICAL(RecoveryMode.WAL_PHYSICAL, RecoveryCompression.SNAPPY),
    /** Logical WAL, recovery files with raw page images. */
    RECOVERY_FILE_DISABLED(RecoveryMode.CHECKPOINT_RECOVERY_FILE, RecoveryCompression.DISABLED),
    /** Logical WAL, recovery files without the unused middle of each page. */
    RECOVERY_FILE_SKIP_GARBAGE(RecoveryMode.CHECKPOINT_RECOVERY_FILE, RecoveryCompression.SKIP_GARBAGE),
    /** Logical WAL, Snappy-compressed recovery files. */
    RECOVERY_FILE_SNAPPY(RecoveryMode.CHECKPOINT_RECOVERY_FILE, RecoveryCompression.SNAPPY);

    private final RecoveryMode mode;
    private final RecoveryCompression compression;

    RecoverySetup(RecoveryMode mode, RecoveryCompression compression) {
        this.mode = mode;
        this.compression = compression;
    }

    /** Sets the recovery mode and compression on {@code b}. */
    VarveConfig.Builder applyTo(VarveConfig.Builder b) {
        return b.recoveryMode(mode).recoveryCompression(compression);
    }

    /** A short column heading. */
    String label() {
        return mode == RecoveryMode.WAL_PHYSICAL ? "WAL_PHYSICAL" : "RF/" + compression;
    }
}
