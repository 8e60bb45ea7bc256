package dev.varve.engine;

/**
 * Iterates entries in key order. It holds no lock between calls: writes made while it is open may or may not be
 * seen (a batch's changes too: those ahead of the cursor show, those behind it do not — read a snapshot view for a
 * consistent read of many keys), but each entry it returns is a value that was stored under that key, and each key
 * comes once (a caller-placed table's scan: once from each partition that holds it). The arrays {@link #key()} and
 * {@link #value()} return are the caller's to keep or change. A cursor is one thread's at a time: open one per
 * thread (its store, tables and views are safe to share).
 */
public interface Cursor extends AutoCloseable {
    /** Moves to the next entry; false at the end. */
    boolean next();

    /** Key of the current entry. */
    byte[] key();

    /** Value of the current entry. */
    byte[] value();

    @Override
    void close();
}
