package dev.varve.engine;

/**
 * The operations of one atomic write across keys, tables and partitions (see {@link Varve#write}). Operations
 * without a partition go to hash-placed tables (created on first use); operations naming a partition go to a table
 * that already exists, which is how a batch reaches a caller-placed table.
 */
public interface WriteBatch {
    /** Adds a put; the table is created on first use. */
    WriteBatch put(String table, byte[] key, byte[] value);

    /** Adds a remove; a table that does not exist is not created by it (unless a put in the batch creates it). */
    WriteBatch remove(String table, byte[] key);

    /**
     * Adds a put into partition {@code partition} of an existing table: any key for a caller-placed table, a key
     * hashing to that partition for a hash-placed one.
     */
    WriteBatch put(String table, int partition, byte[] key, byte[] value);

    /** Adds a remove from partition {@code partition} of an existing table (same rules as the partitioned put). */
    WriteBatch remove(String table, int partition, byte[] key);
}
