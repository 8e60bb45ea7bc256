package dev.varve.benchmarks;

import java.nio.file.Path;

/**
 * One system under test, opened on a fresh directory by the comparison child ({@link CompareChild}): it takes puts and
 * batches of long ids and byte[] values (Varve gets the id as an 8-byte big-endian key, the peers as a {@code Long}),
 * and reports the gauges the harness samples. Every write returns once it is as durable as the run's sync mode says.
 */
interface PeerTarget extends AutoCloseable {
    /** Cumulative counters and current gauges; -1 where a system has no such figure. */
    record Gauges(long walBytes, long throttledNanos, long bufferPages, long dirtyPages) {
    }

    /**
     * One completed checkpoint; times in nanoseconds, -1 where the system does not report a figure.
     *
     * @param key a value that changes with every checkpoint (Varve: its id; Ignite: its start time)
     */
    record Checkpoint(long key, long pages, long recoveryDataBytes, long recoveryDataNanos, long pageWriteNanos, long fsyncNanos,
                      long lockHoldNanos, long totalNanos) {
    }

    void put(long id, byte[] value);

    /** A put by writer thread {@code writer} (0-based); a system that can give each writer its own partition does. */
    default void put(int writer, long id, byte[] value) {
        put(id, value);
    }

    /** Writes {@code n} puts as one call (atomically where the system can; see {@link #describe()}). */
    void putBatch(long[] ids, byte[][] values, int n);

    /** The value of {@code id}, or null. */
    byte[] get(long id);

    /**
     * After a preload, before gets are timed: brings the store to its steady state for reads, so the gets do not run
     * beside the preload's background work (Varve and Ignite: a checkpoint of the preloaded pages; RocksDB: a flush
     * of the memtable). Nothing by default (H2 wrote its pages in each commit).
     */
    default void settle() {
    }

    Gauges gauges();

    /** The last completed checkpoint, or null when there was none (or the system has no checkpoints). */
    Checkpoint lastCheckpoint();

    /** The configuration, in words, for the report. */
    String describe();

    /** Bytes on disk under the store's directory. */
    default long storeBytes(Path dir) {
        try {
            return StoreDirs.size(dir);
        } catch (java.io.IOException | java.io.UncheckedIOException e) {
            return -1;
        }
    }

    @Override
    void close();
}
