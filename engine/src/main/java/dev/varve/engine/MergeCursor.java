package dev.varve.engine;

import java.util.Arrays;
import java.util.List;
import java.util.PriorityQueue;

/** Merges the partitions' cursors of a table into one key order (keys are unique across partitions). */
final class MergeCursor implements Cursor {
    private final PriorityQueue<PartitionCursor> heads = new PriorityQueue<>((a, b) -> Arrays.compareUnsigned(a.key(), b.key()));
    private final List<PartitionCursor> all;
    /**
     * Throws once the store or view read is closed. Checked here too: the partitions' first entries are fetched when
     * the cursor is made, so a first next() after the close would otherwise serve them without asking a partition.
     */
    private final Runnable checkOpen;
    private PartitionCursor current;
    private boolean closed;

    MergeCursor(List<PartitionCursor> cursors, Runnable checkOpen) {
        this.all = cursors;
        this.checkOpen = checkOpen;
        for (PartitionCursor c : cursors) if (c.next()) heads.add(c);
    }

    @Override
    public boolean next() {
        if (closed) throw new IllegalStateException("cursor is closed");
        checkOpen.run();
        if (current != null && current.next()) heads.add(current);
        current = heads.poll();
        return current != null;
    }

    @Override
    public byte[] key() {
        return current().key();
    }

    @Override
    public byte[] value() {
        return current().value();
    }

    private PartitionCursor current() {
        if (closed) throw new IllegalStateException("cursor is closed");
        if (current == null) throw new IllegalStateException("no current entry: call next() first, and only while it returns true");
        return current;
    }

    @Override
    public void close() {
        closed = true;
        all.forEach(PartitionCursor::close);
        heads.clear();
        current = null;
    }
}
