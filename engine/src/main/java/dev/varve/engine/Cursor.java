package dev.varve.engine;

/**
 * Iterates entries in key order. It holds no lock between calls: writes made while it is open may or may not be
 * seen, but each entry it returns is a value that was stored under that key, and each key comes once (a
 * caller-placed table's scan: once from each partition that holds it). The arrays {@link #key()} and
 * {@link #value()} return are the caller's to keep or change.
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
