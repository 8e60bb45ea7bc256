package dev.varve.engine;

import java.util.ArrayList;
import java.util.List;

/** A table: routes each key to its partition by {@link KeyHash}; scans merge the partitions in key order. */
final class TableHandle implements Table {
    private final Engine engine;
    private final String name;
    private final PartitionHandle[] parts;

    TableHandle(Engine engine, String name, PartitionHandle[] parts) {
        this.engine = engine;
        this.name = name;
        this.parts = parts;
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

    PartitionHandle handleFor(byte[] key) {
        engine.checkKey(key);
        return parts[KeyHash.partition(key, parts.length)];
    }

    @Override
    public void put(byte[] key, byte[] value) {
        PartitionHandle h = handleFor(key);
        engine.checkValue(value);
        engine.write(h, key, value);
    }

    @Override
    public byte[] get(byte[] key) {
        return engine.get(handleFor(key), key);
    }

    @Override
    public boolean remove(byte[] key) {
        return engine.write(handleFor(key), key, null);
    }

    @Override
    public Cursor scan(byte[] fromInclusive, byte[] toExclusive) {
        engine.checkOpen();
        List<PartitionCursor> cursors = new ArrayList<>(parts.length);
        for (PartitionHandle h : parts) cursors.add(new PartitionCursor(engine.scanSource(h), fromInclusive, toExclusive));
        return new MergeCursor(cursors);
    }

    @Override
    public Partition partition(int p) {
        if (p < 0 || p >= parts.length) throw new IllegalArgumentException("partition " + p + " out of range [0, " + parts.length + ") of table " + name);
        return new PartitionView(engine, this, parts[p]);
    }

    @Override
    public String toString() {
        return "table " + name + " (" + parts.length + " partitions)";
    }
}
