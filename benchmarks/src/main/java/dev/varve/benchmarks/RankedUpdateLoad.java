package dev.varve.benchmarks;

import dev.varve.engine.Varve;

import java.util.SplittableRandom;

/**
 * Thresher's update load for {@link RetentionComparison}: a fixed key space of 8-byte keys with
 * {@value #VALUE_BYTES}-byte values, preloaded, then overwritten at random in atomic batches ({@link Varve#write}),
 * with a snapshot declared after every batch and every {@code every}-th one given rank 2 as {@link Ranking} says.
 * Every value is {@link Values#of} a fresh value id and the last id put under each key is kept, so a reader can check
 * what a snapshot should hold ({@link #valueIds()}) without keeping value bytes.
 */
final class RankedUpdateLoad {
    static final String TABLE = "kv";
    static final int VALUE_BYTES = 100;
    /** Batch size of {@link #overwriteAll}. */
    private static final int OVERWRITE_BATCH = 256;

    /** How the snapshot after each batch is declared. */
    enum Ranking {
        /** No snapshot at all: the baseline. */
        NONE,
        /** Every snapshot rank 1 (one level: unsegregated). */
        FLAT,
        /** Every {@code every}-th snapshot declared with rank 2 ({@code snapshotNow(2)}). */
        EAGER,
        /**
         * Every {@code every}-th snapshot declared with rank 1, then raised ({@code rank(id, 2)}) {@code rankDelay}
         * batches later — inside the page window when the delay is below W.
         */
        LAZY
    }

    private final Varve store;
    private final int batchSize;
    private final Ranking ranking;
    private final int every;
    private final int rankDelay;
    /** Lazily ranked snapshots waiting for their raise: {batch due, id}. */
    private final java.util.ArrayDeque<long[]> raises = new java.util.ArrayDeque<>();
    private final SplittableRandom random;
    /** The value id last put under each key. */
    private final long[] valueIds;
    private final int[] batchKeys;
    private long nextValueId;
    private long batches;

    /**
     * Puts every key of [0, {@code keys}) (value id = key id) and returns the load; the caller checkpoints.
     * {@code every} is ignored for {@link Ranking#NONE} and {@link Ranking#FLAT}, {@code rankDelay} for all but
     * {@link Ranking#LAZY}.
     */
    static RankedUpdateLoad preload(Varve store, int keys, int batchSize, Ranking ranking, int every, int rankDelay, long seed) {
        if (batchSize > keys) throw new IllegalArgumentException("batch of " + batchSize + " distinct keys from " + keys + " keys");
        if ((ranking == Ranking.EAGER || ranking == Ranking.LAZY) && every < 1) throw new IllegalArgumentException("every must be >= 1, was " + every);
        Preload.keys(store, TABLE, keys, VALUE_BYTES, 0);
        return new RankedUpdateLoad(store, keys, batchSize, ranking, every, rankDelay, seed);
    }

    private RankedUpdateLoad(Varve store, int keys, int batchSize, Ranking ranking, int every, int rankDelay, long seed) {
        this.store = store;
        this.batchSize = batchSize;
        this.ranking = ranking;
        this.every = every;
        this.rankDelay = rankDelay;
        this.random = new SplittableRandom(seed);
        this.valueIds = new long[keys];
        for (int k = 0; k < keys; k++) valueIds[k] = k;
        this.batchKeys = new int[batchSize];
        this.nextValueId = keys;
    }

    /** One batch of random overwrites, then the snapshot {@link Ranking} asks for; returns its id, or -1 when none. */
    long step() {
        int n = 0;
        while (n < batchSize) { // distinct keys, so "last write wins" inside a batch never matters to a reader
            int k = random.nextInt(valueIds.length);
            boolean seen = false;
            for (int i = 0; i < n && !seen; i++) seen = batchKeys[i] == k;
            if (!seen) batchKeys[n++] = k;
        }
        long first = nextValueId;
        store.write(b -> {
            for (int i = 0; i < batchSize; i++) b.put(TABLE, Keys.of(batchKeys[i]), Values.of(first + i, VALUE_BYTES));
        });
        for (int i = 0; i < batchSize; i++) valueIds[batchKeys[i]] = first + i;
        nextValueId += batchSize;
        batches++;
        boolean ranked = every > 0 && batches % every == 0;
        return switch (ranking) {
            case NONE -> -1;
            case FLAT -> store.snapshotNow(1);
            case EAGER -> store.snapshotNow(ranked ? 2 : 1);
            case LAZY -> {
                long id = store.snapshotNow(1);
                if (ranked) raises.addLast(new long[]{batches + rankDelay, id});
                while (!raises.isEmpty() && raises.peekFirst()[0] <= batches) store.rank(raises.pollFirst()[1], 2);
                yield id;
            }
        };
    }

    /** Puts a new value under every key, in key order, with no snapshot: afterwards every leaf differs from before. */
    void overwriteAll() {
        for (int from = 0; from < valueIds.length; from += OVERWRITE_BATCH) {
            int lo = from;
            int hi = Math.min(valueIds.length, from + OVERWRITE_BATCH);
            long first = nextValueId;
            store.write(b -> {
                for (int k = lo; k < hi; k++) b.put(TABLE, Keys.of(k), Values.of(first + k - lo, VALUE_BYTES));
            });
            for (int k = lo; k < hi; k++) valueIds[k] = first + k - lo;
            nextValueId += hi - lo;
        }
    }

    /** A copy of the value id of every key now: {@code Values.of(ids[k], VALUE_BYTES)} is key k's value. */
    long[] valueIds() {
        return valueIds.clone();
    }

    int keys() {
        return valueIds.length;
    }

    long batches() {
        return batches;
    }

    int batchSize() {
        return batchSize;
    }
}
