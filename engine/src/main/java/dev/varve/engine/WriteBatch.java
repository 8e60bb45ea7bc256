package dev.varve.engine;

/** The operations of one atomic write across keys, tables and partitions (see {@link Varve#write}). */
public interface WriteBatch {
    /** Adds a put; the table is created on first use. */
    WriteBatch put(String table, byte[] key, byte[] value);

    /** Adds a remove. */
    WriteBatch remove(String table, byte[] key);
}
