package dev.varve.engine;

import java.util.List;

/**
 * A read-only view of the store as of a snapshot; the same {@link Table} and {@link Cursor} API, writes throw
 * {@link UnsupportedOperationException}. Once the view or its store is closed, every read or write through it, its
 * tables, partitions and cursors throws {@link IllegalStateException} (what they hold in memory, such as {@link #id()}
 * or a table's name, still answers).
 */
public interface SnapshotView extends AutoCloseable {
    /** The snapshot id. */
    long id();

    /** The names of the tables that existed at the snapshot, in unsigned UTF-8 byte order. */
    List<String> tables();

    /** The table as of the snapshot. */
    Table table(String name);

    @Override
    void close();
}
