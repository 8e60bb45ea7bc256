package dev.varve.engine;

import java.util.List;

/**
 * Receives the changes made to a store after a snapshot (see {@link Varve#follow}): what the logical WAL records
 * say, decoded, as each write is logged.
 *
 * <p>Each call is made on the writer's thread inside the write's critical section (after its WAL record was appended
 * and its pages changed, while it holds the locks of the partitions it wrote; a table's creation before the table
 * can be found by name, so that it comes before any write into it): an implementation must be thread-safe, must not
 * block and must not call the store. Calls for one partition come in WAL order; calls for different partitions may
 * interleave in any order, but never across a snapshot or rank declaration: every write committed before a
 * declaration was delivered before it, every later one after it. Replaying the calls in the order they arrive
 * therefore reproduces the store's state at every declaration. A listener that throws anything (an Error
 * too) is unsubscribed (the write itself stands).
 *
 * <p>A call comes when the write is logged, before its commit returns: should the store crash before the commit
 * made the record as durable as {@code walSyncMode} promises (under {@code FSYNC}, before its fsync; under
 * {@code LOG_ONLY} and {@code BACKGROUND} only a power loss, which may take acknowledged writes too), or the commit
 * fail, the listener was told of a change the store may not hold after its next open and whose writer was never told
 * it succeeded. A feed ends, without a call, when the store
 * closes; there is no resuming one from an LSN (follow again, from a new snapshot).
 */
public interface ChangeListener {
    /** One atomic write (a single put or remove, or a whole batch): puts have a value, removes a null value. */
    void onWrite(long lsn, List<Change> changes);

    /**
     * A table of {@code partitions} partitions was created: what {@link #onTableCreated(long, String, TableOptions)}
     * forwards to unless overridden, for a listener that does not care about placement. Does nothing by default.
     */
    default void onTableCreated(long lsn, String table, int partitions) {
    }

    /**
     * A table was created with {@code options} (placement and partition count); the store calls this one. By default
     * it forwards to {@link #onTableCreated(long, String, int)}.
     */
    default void onTableCreated(long lsn, String table, TableOptions options) {
        onTableCreated(lsn, table, options.partitions());
    }

    /** Partition {@code partition} of {@code table} was emptied ({@link Partition#destroy()}). */
    void onPartitionDestroyed(long lsn, String table, int partition);

    /** A snapshot was declared. */
    void onSnapshot(long lsn, long id, int rank);

    /** A snapshot's rank was raised. */
    void onRank(long lsn, long id, int rank);

    /**
     * One put ({@code value} non-null) or remove.
     *
     * @param table     table name
     * @param key       key
     * @param value     new value, or null for a remove
     * @param partition the partition of the table it went to (the caller's choice in a caller-placed table)
     */
    record Change(String table, byte[] key, byte[] value, int partition) {
    }
}
