package dev.varve.benchmarks;

/** How often {@link SnapshotCostLoad}'s writer declares a snapshot: never, after every batch, or once per interval. */
enum SnapshotCadence {
    NONE("none", 0),
    EVERY_BATCH("after every batch", 0),
    EVERY_1_MS("every 1 ms", 1_000_000L),
    EVERY_10_MS("every 10 ms", 10_000_000L),
    EVERY_100_MS("every 100 ms", 100_000_000L),
    EVERY_1_S("every 1 s", 1_000_000_000L);

    final String label;
    /** For a timed cadence, the least time between two declarations; 0 otherwise. */
    final long intervalNanos;

    SnapshotCadence(String label, long intervalNanos) {
        this.label = label;
        this.intervalNanos = intervalNanos;
    }

    boolean timed() {
        return intervalNanos > 0;
    }
}
