package dev.varve.benchmarks;

import dev.varve.engine.Table;

/**
 * The recovery-mode load: puts of monotonically increasing (so mostly unique, never repeated) keys with values of
 * 100..300 bytes ({@link Values#textPool text-like}), the IEP-113 case where physical WAL records cost the most.
 * One instance per writing thread.
 */
final class UniquePutLoad {
    static final int MIN_VALUE_BYTES = 100;
    static final int MAX_VALUE_BYTES = 300;
    private static final int POOL_SIZE = 4096; // a power of two

    private final byte[][] values;
    private long nextId;
    private long valueBytes;

    UniquePutLoad(long firstId, long seed) {
        this.values = Values.textPool(POOL_SIZE, MIN_VALUE_BYTES, MAX_VALUE_BYTES, seed);
        this.nextId = firstId;
    }

    /** Puts the next key; returns its id. */
    long putNext(Table table) {
        long id = nextId++;
        byte[] v = valueOf(id);
        table.put(Keys.of(id), v);
        valueBytes += v.length;
        return id;
    }

    /** The value this load puts (or put) under {@code id}: a load made with the same seed can verify another's writes. */
    byte[] valueOf(long id) {
        return values[(int) id & (POOL_SIZE - 1)];
    }

    /** The id the next put will use: ids are consecutive from the first. */
    long nextId() {
        return nextId;
    }

    /** Value bytes put so far. */
    long valueBytes() {
        return valueBytes;
    }
}
