package dev.varve.engine;

/** A read-only view of the store as of a snapshot; the same {@link Table} and {@link Cursor} API, writes throw. */
public interface SnapshotView extends AutoCloseable {
    /** The snapshot id. */
    long id();

    /** The table as of the snapshot. */
    Table table(String name);

    @Override
    void close();
}
