package dev.varve.engine;

import java.util.List;

/** A read-only view of the store as of a snapshot; the same {@link Table} and {@link Cursor} API, writes throw. */
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
