package dev.varve.benchmarks;

/**
 * The configurations the comparison harness ({@code --compare}) runs side by side: Varve in each recovery mode, Apache
 * Ignite native persistence with physical WAL records and with checkpoint recovery data (IEP-113), and H2 MVStore.
 */
enum CompareSetup {
    VARVE_WAL_PHYSICAL("Varve WAL", Kind.VARVE, RecoverySetup.WAL_PHYSICAL),
    VARVE_RF_DISABLED("Varve RF/DISABLED", Kind.VARVE, RecoverySetup.RECOVERY_FILE_DISABLED),
    VARVE_RF_SKIP_GARBAGE("Varve RF/SKIP_GARBAGE", Kind.VARVE, RecoverySetup.RECOVERY_FILE_SKIP_GARBAGE),
    VARVE_RF_SNAPPY("Varve RF/SNAPPY", Kind.VARVE, RecoverySetup.RECOVERY_FILE_SNAPPY),
    /** Ignite 2.18, default physical WAL records (page snapshots and deltas). */
    IGNITE_WAL_PHYSICAL("Ignite WAL", Kind.IGNITE, null),
    /** Ignite 2.18 with {@code writeRecoveryDataOnCheckpoint=true} (IEP-113), recovery data uncompressed. */
    IGNITE_RECOVERY_DATA("Ignite RF", Kind.IGNITE, null),
    H2_MVSTORE("H2 MVStore", Kind.H2, null);

    /** Which engine a setup runs. */
    enum Kind { VARVE, IGNITE, H2 }

    final String label;
    final Kind kind;
    /** Varve's recovery mode and compression; null for the peers. */
    final RecoverySetup varve;

    CompareSetup(String label, Kind kind, RecoverySetup varve) {
        this.label = label;
        this.kind = kind;
        this.varve = varve;
    }
}
