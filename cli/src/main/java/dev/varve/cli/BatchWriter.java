package dev.varve.cli;

import dev.varve.engine.Varve;

import java.util.ArrayList;
import java.util.List;

/** Writes entries into a new store in atomic batches of bounded size (load, backup, salvage). */
final class BatchWriter {
    private static final int MAX_OPS = 64; // a batch must fit in half the smallest data region (2048 pages)
    private static final long MAX_BYTES = 1L << 20;

    /** One put; {@code partition} -1 places the key by hash. */
    private record Put(String table, int partition, byte[] key, byte[] value) {
    }

    private final Varve store;
    private final List<Put> pending = new ArrayList<>();
    private long pendingBytes;
    private long written;

    BatchWriter(Varve store) {
        this.store = store;
    }

    /** A put into partition {@code partition} of an existing table (-1: by key hash). */
    void put(String table, int partition, byte[] key, byte[] value) {
        if (pendingBytes + key.length + value.length > MAX_BYTES) flush();
        pending.add(new Put(table, partition, key, value));
        pendingBytes += key.length + value.length;
        if (pending.size() >= MAX_OPS) flush();
    }

    /** Writes what is pending; returns the entries written so far. */
    long flush() {
        if (!pending.isEmpty()) {
            store.write(b -> {
                for (Put p : pending) {
                    if (p.partition() < 0) b.put(p.table(), p.key(), p.value());
                    else b.put(p.table(), p.partition(), p.key(), p.value());
                }
            });
            written += pending.size();
            pending.clear();
            pendingBytes = 0;
        }
        return written;
    }
}
