package dev.varve.cli;

import dev.varve.engine.Varve;

import java.util.ArrayList;
import java.util.List;

/**
 * Writes entries into a new store in atomic batches of bounded size (load, backup, salvage). A batch also stays
 * within the pages one change may touch in the target's data region, as the store itself counts them
 * ({@link Varve#batchFitsDataRegion}): a fixed count of operations did not, since in a region of the least 2,048 pages
 * 64 operations alone take all the store allows, and one byte of value more was refused.
 */
final class BatchWriter {
    /**
     * Most operations in one batch, however large the region: one WAL record per 64 entries rather than per entry,
     * while the pages a batch reserves (16 an operation) stay a small share of a large region.
     */
    private static final int MAX_OPS = 64;
    private static final long MAX_BYTES = 1L << 20;

    /** One put; {@code partition} -1 places the key by hash. */
    private record Put(String table, int partition, byte[] key, byte[] value) {
    }

    private final Varve store;
    private final List<Put> pending = new ArrayList<>();
    private long pendingBytes;

    BatchWriter(Varve store) {
        this.store = store;
    }

    /** A put into partition {@code partition} of an existing table (-1: by key hash). */
    void put(String table, int partition, byte[] key, byte[] value) {
        long bytes = key.length + (long) value.length;
        // one put alone always goes: the store names the limit if even that is too much for it
        if (!pending.isEmpty() && !fits(pending.size() + 1, pendingBytes + bytes)) flush();
        pending.add(new Put(table, partition, key, value));
        pendingBytes += bytes;
    }

    /** Whether a batch of {@code operations} puts of {@code bytes} (keys and values) stays within every bound. */
    private boolean fits(int operations, long bytes) {
        return operations <= MAX_OPS && bytes <= MAX_BYTES && store.batchFitsDataRegion(operations, bytes);
    }

    /** Writes what is pending as one batch. */
    void flush() {
        if (!pending.isEmpty()) {
            store.write(b -> {
                for (Put p : pending) {
                    if (p.partition() < 0) b.put(p.table(), p.key(), p.value());
                    else b.put(p.table(), p.partition(), p.key(), p.value());
                }
            });
            pending.clear();
            pendingBytes = 0;
        }
    }
}
