package dev.varve.engine;

import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageId;
import dev.varve.core.tree.BPlusTree;
import dev.varve.core.tree.ScanBatch;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The catalog of tables, kept in pages: a B+tree in file 0 (table 0, partition 0) mapping a table's UTF-8 name to
 * its id, partition count and placement. Because it lives in pages, a past-state read sees the catalog as of its
 * snapshot.
 *
 * <pre>
 * value: tableId (4) | partitions (4) | placement (1: 0 hash, 1 caller)
 * </pre>
 * Stores written before caller placement existed hold 8-byte values without the placement byte: hash-placed.
 */
final class Catalog {
    static final int FILE_ID = PageId.fileId(0, 0);

    /** A table's catalog entry. */
    record Entry(String name, int id, TableOptions options) {
        int partitions() {
            return options.partitions();
        }
    }

    private static final byte HASH = 0;
    private static final byte CALLER = 1;

    private final BPlusTree tree;

    Catalog(PageAccess pages) {
        this.tree = new BPlusTree(pages, FILE_ID);
    }

    /** Formats an empty catalog (a store's first open). */
    static void format(PageAccess pages) {
        BPlusTree.format(pages, FILE_ID);
    }

    /** The entry of {@code name}, or null. */
    Entry find(String name) {
        byte[] v = tree.get(name.getBytes(StandardCharsets.UTF_8));
        return v == null ? null : decode(name, v);
    }

    void add(Entry e) {
        byte[] v = ByteBuffer.allocate(9).order(ByteOrder.LITTLE_ENDIAN).putInt(e.id()).putInt(e.partitions())
                .put(e.options().callerPlaced() ? CALLER : HASH).array();
        tree.put(e.name().getBytes(StandardCharsets.UTF_8), v);
    }

    /** Every table, in name order. */
    List<Entry> all() {
        List<Entry> out = new ArrayList<>();
        byte[] from = null;
        boolean inclusive = true;
        while (true) {
            ScanBatch b = tree.scan(from, inclusive, null, 256);
            for (int i = 0; i < b.size(); i++) out.add(decode(new String(b.key(i), StandardCharsets.UTF_8), b.value(i)));
            if (!b.hasMore() || b.isEmpty()) return out;
            from = b.lastKey();
            inclusive = false;
        }
    }

    /** An entry from its name and stored value (also used by salvage, which reads catalog leaves raw). */
    static Entry decode(String name, byte[] v) {
        ByteBuffer b = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN);
        int id = b.getInt();
        int partitions = b.getInt();
        byte placement = b.hasRemaining() ? b.get() : HASH;
        if (placement != HASH && placement != CALLER) throw new IllegalStateException("catalog entry of table " + name + " has unknown placement " + placement);
        return new Entry(name, id, placement == CALLER ? TableOptions.callerPlaced(partitions) : TableOptions.hashPlaced(partitions));
    }
}
