package dev.varve.engine;

import dev.varve.core.tree.ScanBatch;

import java.util.Arrays;

/**
 * Scans one partition in batches: each batch is copied out under the partition's read lock, then the lock is
 * dropped, so a slow consumer never blocks the partition's writer.
 */
final class PartitionCursor implements Cursor {
    private static final int BATCH = 128;
    private final Engine engine;
    private final PartitionHandle handle;
    private final byte[] to;
    private byte[] resume;
    private boolean inclusive;
    private ScanBatch batch;
    private int index = -1;
    private boolean done;
    private boolean closed;

    PartitionCursor(Engine engine, PartitionHandle handle, byte[] from, byte[] to) {
        this.engine = engine;
        this.handle = handle;
        this.resume = from == null ? null : Arrays.copyOf(from, from.length);
        this.inclusive = true;
        this.to = to == null ? null : Arrays.copyOf(to, to.length);
    }

    @Override
    public boolean next() {
        if (closed) throw new IllegalStateException("cursor is closed");
        if (batch != null && index + 1 < batch.size()) {
            index++;
            return true;
        }
        if (done) return false;
        engine.checkOpen();
        handle.lock.readLock().lock();
        try {
            batch = handle.tree.scan(resume, inclusive, to, BATCH);
        } finally {
            handle.lock.readLock().unlock();
        }
        done = !batch.hasMore();
        if (batch.isEmpty()) {
            done = true;
            return false;
        }
        resume = batch.lastKey();
        inclusive = false;
        index = 0;
        return true;
    }

    @Override
    public byte[] key() {
        return current().key(index);
    }

    @Override
    public byte[] value() {
        return current().value(index);
    }

    private ScanBatch current() {
        if (closed) throw new IllegalStateException("cursor is closed");
        if (batch == null || index < 0) throw new IllegalStateException("call next() first");
        return batch;
    }

    @Override
    public void close() {
        closed = true;
        batch = null;
    }
}
