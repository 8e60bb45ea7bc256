package dev.varve.engine;

import dev.varve.core.tree.ScanBatch;

import java.util.Arrays;

/**
 * Scans one partition in batches: each batch is copied out (for the current state, under the partition's read
 * lock), then nothing is held, so a slow consumer never blocks the partition's writer.
 */
final class PartitionCursor implements Cursor {
    /** Where batches come from: the current partition, or the partition as of a snapshot. */
    interface BatchSource {
        ScanBatch scan(byte[] from, boolean fromInclusive, byte[] toExclusive, int maxEntries);
    }

    /** First batch: small, because a table scan opens one cursor per partition and may want few entries. */
    private static final int FIRST_BATCH = 8;
    private static final int MAX_BATCH = 256;
    private final BatchSource source;
    /** Throws once the store or view the cursor reads is closed: a buffered batch is not served after that. */
    private final Runnable checkOpen;
    private final byte[] to;
    private byte[] resume;
    private boolean inclusive;
    private ScanBatch batch;
    private int index = -1;
    private boolean done;
    private boolean closed;
    private int batchSize = FIRST_BATCH;

    PartitionCursor(BatchSource source, Runnable checkOpen, byte[] from, byte[] to) {
        this.source = source;
        this.checkOpen = checkOpen;
        this.resume = from == null ? null : Arrays.copyOf(from, from.length);
        this.inclusive = true;
        this.to = to == null ? null : Arrays.copyOf(to, to.length);
    }

    @Override
    public boolean next() {
        if (closed) throw new IllegalStateException("cursor is closed");
        checkOpen.run();
        if (batch != null && index + 1 < batch.size()) {
            index++;
            return true;
        }
        batch = null; // past the last entry: key() and value() have no current entry any more
        if (done) return false;
        ScanBatch next = source.scan(resume, inclusive, to, batchSize);
        batchSize = Math.min(MAX_BATCH, batchSize * 2);
        done = !next.hasMore();
        if (next.isEmpty()) {
            done = true;
            return false;
        }
        batch = next;
        resume = batch.lastKey().clone(); // key() hands this very array to the caller, who may reuse it
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
        checkOpen.run(); // the entry is buffered, but a closed store or view serves nothing, not even what it read before
        if (batch == null || index < 0) throw new IllegalStateException("no current entry: call next() first, and only while it returns true");
        return batch;
    }

    @Override
    public void close() {
        closed = true;
        batch = null;
    }
}
