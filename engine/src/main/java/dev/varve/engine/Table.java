package dev.varve.engine;

/**
 * A named key space, split into partitions by key hash or, for a caller-placed table, by the caller (see
 * {@link TableOptions}; table-level {@code put}, {@code get} and {@code remove} of a caller-placed table throw
 * {@link IllegalArgumentException}). Keys are byte strings in unsigned lexicographic order, up
 * to {@link Varve#maxKeyBytes()} bytes; values up to {@link Varve#MAX_VALUE_BYTES} bytes. Each write returns once it
 * is as durable as the configured {@code walSyncMode} promises. A put (or a batch) that may take more pages than its
 * partition's file has left below the limit of 2^31 - 1 pages is refused with
 * {@link dev.varve.core.io.PartitionFullException} and changes nothing.
 */
public interface Table {
    /** The table's name. */
    String name();

    /** Number of partitions. */
    int partitions();

    /**
     * How the table places keys, and its partition count; null for a table that a {@link SnapshotView} reads as empty
     * because it did not exist as of the snapshot.
     */
    TableOptions options();

    /** Stores {@code value} under {@code key}, replacing any previous value. */
    void put(byte[] key, byte[] value);

    /** The value of {@code key}, or null when absent. */
    byte[] get(byte[] key);

    /** Removes {@code key}; true when it was present. */
    boolean remove(byte[] key);

    /** Entries with {@code fromInclusive <= key < toExclusive} in key order; a null bound is open. */
    Cursor scan(byte[] fromInclusive, byte[] toExclusive);

    /** The same operations limited to partition {@code p}, plus {@link Partition#destroy()}. */
    Partition partition(int p);
}
