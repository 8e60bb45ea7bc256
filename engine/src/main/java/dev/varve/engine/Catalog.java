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
 * its id and partition count. Because it lives in pages, a past-state read sees the catalog as of its snapshot.
 */
final class Catalog {
    static final int FILE_ID = PageId.fileId(0, 0);

    /** A table's catalog entry. */
    record Entry(String name, int id, int partitions) {
    }

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
        byte[] v = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(e.id()).putInt(e.partitions()).array();
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
        return new Entry(name, b.getInt(), b.getInt());
    }
}
