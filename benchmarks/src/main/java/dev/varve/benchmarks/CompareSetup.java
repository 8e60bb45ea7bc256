package dev.varve.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The configurations the comparison harness ({@code --compare}) runs side by side: Varve in each recovery mode, Apache
 * Ignite native persistence with physical WAL records and with checkpoint recovery data (IEP-113), H2 MVStore, and
 * RocksDB.
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
    H2_MVSTORE("H2 MVStore", Kind.H2, null),
    /** RocksDB (rocksdbjni) with its WAL on: what most JVM users pick for an embedded persistent key-value store. */
    ROCKSDB("RocksDB", Kind.ROCKSDB, null);

    /** Which engine a setup runs. */
    enum Kind { VARVE, IGNITE, H2, ROCKSDB }

    final String label;
    final Kind kind;
    /** Varve's recovery mode and compression; null for the peers. */
    final RecoverySetup varve;

    CompareSetup(String label, Kind kind, RecoverySetup varve) {
        this.label = label;
        this.kind = kind;
        this.varve = varve;
    }

    /**
     * The setups a {@code --systems} list names: setup names in any case with {@code -} or {@code _}, or {@code varve}
     * (its four setups), {@code ignite} (both), {@code all}; in {@link #values()} order.
     *
     * @throws IllegalArgumentException naming the first word that is not a setup, or when the list names none
     */
    static List<CompareSetup> parse(String list) {
        List<CompareSetup> named = new ArrayList<>();
        for (String word : list.split(",")) {
            String w = word.trim().toUpperCase(Locale.ROOT).replace('-', '_');
            boolean found = false;
            for (CompareSetup s : values()) {
                if (w.equals("ALL") || w.equals(s.name()) || w.equals(s.kind.name())) {
                    named.add(s);
                    found = true;
                }
            }
            if (!found) {
                throw new IllegalArgumentException("unknown system '" + word.trim() + "'; systems: all, varve, ignite, "
                        + String.join(", ", Arrays.stream(values()).map(s -> s.name().toLowerCase(Locale.ROOT)).toList()));
            }
        }
        if (named.isEmpty()) throw new IllegalArgumentException("names no system: '" + list + "'"); // "," splits into no word
        return Arrays.stream(values()).filter(named::contains).toList();
    }
}
