package dev.varve.benchmarks;

import dev.varve.engine.Varve;

/** Fills a table with keys [0, n) in atomic batches, before a benchmark measures anything. */
final class Preload {
    private static final int BATCH = 256;

    private Preload() {
    }

    /** Puts every key {@code id} of [0, n) with the {@code valueBytes}-byte value of {@code id + valueOffset}. */
    static void keys(Varve store, String table, long n, int valueBytes, long valueOffset) {
        for (long first = 0; first < n; first += BATCH) {
            long from = first;
            long to = Math.min(n, first + BATCH);
            store.write(b -> {
                for (long id = from; id < to; id++) b.put(table, Keys.of(id), Values.of(id + valueOffset, valueBytes));
            });
        }
    }
}
