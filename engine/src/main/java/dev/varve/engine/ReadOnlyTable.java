package dev.varve.engine;

import dev.varve.core.io.StorageException;
import dev.varve.core.tree.BPlusTree;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * A table as of a snapshot: the same B+tree code over the snapshot's page source, routed like the live table (by
 * the same key hash, or by the caller's partition). A table that did not exist as of the snapshot reads as empty.
 * Writes throw.
 */
final class ReadOnlyTable implements Table {
    private final SnapshotViewImpl view;
    private final String name;
    private final TableOptions options;
    private final BPlusTree[] trees;

    ReadOnlyTable(SnapshotViewImpl view, String name, TableOptions options, BPlusTree[] trees) {
        this.view = view;
        this.name = name;
        this.options = options;
        this.trees = trees;
    }

    @Override
    public TableOptions options() {
        return options;
    }

    private boolean callerPlaced() {
        return options != null && options.callerPlaced();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int partitions() {
        return trees.length;
    }

    private BPlusTree treeFor(byte[] key) {
        view.checkKey(key);
        if (callerPlaced()) throw TableHandle.callerPlaced(name);
        return trees.length == 0 ? null : trees[KeyHash.partition(key, trees.length)];
    }

    @Override
    public byte[] get(byte[] key) {
        BPlusTree t = treeFor(key);
        return t == null ? null : get(t, key);
    }

    private byte[] get(BPlusTree t, byte[] key) {
        return read(() -> t.get(key));
    }

    /** A read of the snapshot; one that failed because its view or store was closed under it says so, not as damage. */
    private <T> T read(Supplier<T> read) {
        try {
            return read.get();
        } catch (StorageException e) {
            view.checkOpen();
            throw e;
        }
    }

    @Override
    public Cursor scan(byte[] fromInclusive, byte[] toExclusive) {
        view.checkOpen();
        List<PartitionCursor> cursors = new ArrayList<>(trees.length);
        for (BPlusTree t : trees) cursors.add(cursor(t, fromInclusive, toExclusive));
        return new MergeCursor(cursors, view::checkOpen);
    }

    private PartitionCursor cursor(BPlusTree t, byte[] from, byte[] to) {
        return new PartitionCursor((f, inclusive, end, max) -> read(() -> t.scan(f, inclusive, end, max)), view::checkOpen, from, to);
    }

    @Override
    public void put(byte[] key, byte[] value) {
        throw readOnly();
    }

    @Override
    public boolean remove(byte[] key) {
        throw readOnly();
    }

    @Override
    public Partition partition(int p) {
        view.checkOpen();
        if (p < 0 || p >= trees.length) throw new IllegalArgumentException("partition " + p + " out of range [0, " + trees.length + ") of table " + name
                + " as of snapshot " + view.id());
        BPlusTree t = trees[p];
        return new Partition() {
            @Override
            public int index() {
                return p;
            }

            @Override
            public void put(byte[] key, byte[] value) {
                throw readOnly();
            }

            @Override
            public byte[] get(byte[] key) {
                if (callerPlaced()) view.checkKey(key);
                else if (treeFor(key) != t) throw new IllegalArgumentException("key belongs to another partition of table " + name);
                return ReadOnlyTable.this.get(t, key);
            }

            @Override
            public boolean remove(byte[] key) {
                throw readOnly();
            }

            @Override
            public Cursor scan(byte[] fromInclusive, byte[] toExclusive) {
                view.checkOpen();
                return cursor(t, fromInclusive, toExclusive);
            }

            @Override
            public long size() {
                view.checkOpen();
                return t.size();
            }

            @Override
            public void destroy() {
                throw readOnly();
            }
        };
    }

    /** A write through the view: unsupported, but a closed view or store says so first, as every other call of it does. */
    private UnsupportedOperationException readOnly() {
        view.checkOpen();
        return new UnsupportedOperationException("snapshot view " + view.id() + " is read-only");
    }
}
