package dev.varve.engine;

import java.util.ArrayList;
import java.util.List;

/**
 * A table: a hash-placed table routes each key to its partition by {@link KeyHash}; a caller-placed one takes the
 * partition from the caller (see {@link TableOptions}). Scans merge the partitions in key order.
 */
final class TableHandle extends RoutedOperations implements Table {
    private final String name;
    private final TableOptions options;
    private final PartitionHandle[] parts;

    TableHandle(Engine engine, String name, TableOptions options, PartitionHandle[] parts) {
        super(engine);
        this.name = name;
        this.options = options;
        this.parts = parts;
    }

    @Override
    public TableOptions options() {
        return options;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int partitions() {
        return parts.length;
    }

    /** Every partition, by index. */
    PartitionHandle[] handles() {
        return parts.clone();
    }

    /** The partition of {@code key} in a hash-placed table. */
    PartitionHandle handleFor(byte[] key) {
        engine.limits.checkKey(key);
        if (options.callerPlaced()) throw callerPlaced(name);
        return parts[KeyHash.partition(key, parts.length)];
    }

    /** Partition {@code p} for {@code key}: any key in a caller-placed table, only a key hashing to {@code p} otherwise. */
    PartitionHandle handleFor(int p, byte[] key) {
        PartitionHandle h = handle(p);
        engine.limits.checkKey(key);
        if (!options.callerPlaced()) {
            int owner = KeyHash.partition(key, parts.length);
            if (owner != p) {
                engine.checkOpen(); // a closed store says so, not that the key belongs elsewhere (on the error path only)
                throw new IllegalArgumentException("key belongs to partition " + owner + " of table " + name + ", not partition " + p);
            }
        }
        return h;
    }

    private PartitionHandle handle(int p) {
        if (p < 0 || p >= parts.length) throw new IllegalArgumentException("partition " + p + " out of range [0, " + parts.length + ") of table " + name);
        return parts[p];
    }

    static IllegalArgumentException callerPlaced(String table) {
        return new IllegalArgumentException("table " + table + " is caller-placed: name the partition (table.partition(p), batch.put(table, p, ...))");
    }

    @Override
    PartitionHandle route(byte[] key) {
        return handleFor(key);
    }

    @Override
    public Cursor scan(byte[] fromInclusive, byte[] toExclusive) {
        engine.checkOpen();
        List<PartitionCursor> cursors = new ArrayList<>(parts.length);
        for (PartitionHandle h : parts) cursors.add(new PartitionCursor(engine.scanSource(h), engine::checkOpen, fromInclusive, toExclusive));
        return new MergeCursor(cursors, engine::checkOpen);
    }

    @Override
    public Partition partition(int p) {
        engine.checkOpen();
        return new PartitionView(engine, this, handle(p));
    }

    @Override
    public String toString() {
        return "table " + name + " (" + options + ")";
    }
}
